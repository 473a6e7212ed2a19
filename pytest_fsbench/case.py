"""CaseSpec: one filesystem configuration of the matrix (fs x layout x options)."""

from __future__ import annotations

from dataclasses import dataclass

#: devices each layout needs (RAID5 with three, the minimum that has parity striped over data)
LAYOUT_DEVICES: dict[str, int] = {"single": 1, "raid0": 2, "raid1": 2, "raid10": 4, "raid5": 3}


@dataclass(frozen=True)
class CaseSpec:
    """A frozen filesystem configuration; its id names the case in test ids and results.

    The id shows the options whose keys vary within the session (the ones that tell its cases
    apart, e.g. compression=off / gzip). An option set once for every case of a filesystem is
    applied and recorded but left out of the id, so the case keeps its identity against a
    baseline: changing a mount option is then a change the regression gate sees.
    """

    fs: str
    layout: str
    options: tuple[tuple[str, str], ...] = ()
    shown: tuple[str, ...] | None = None  # option keys in the id; None: all
    kernel: str = "host"  # the label of the kernel it runs under (kernels.Kernel); ids show a guest's

    @property
    def in_guest(self) -> bool:
        return self.kernel != "host"

    @property
    def devices_needed(self) -> int:
        return LAYOUT_DEVICES[self.layout]

    @property
    def id(self) -> str:
        parts = [self.kernel] if self.in_guest else []
        parts += [self.fs, self.layout]
        parts += [f"{key}={value}".replace(" ", "_") for key, value in self.options
                  if self.shown is None or key in self.shown]
        return "-".join(parts)

    def option(self, key: str) -> str | None:
        for name, value in self.options:
            if name == key:
                return value
        return None

    def to_dict(self) -> dict[str, object]:
        found: dict[str, object] = {"fs": self.fs, "layout": self.layout, "options": dict(self.options), "id": self.id}
        if self.in_guest:
            found["kernel"] = self.kernel
        return found

    def options_text(self) -> str:
        return ",".join(f"{key}={value}" for key, value in self.options) or "none"
