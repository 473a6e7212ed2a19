"""CaseSpec: one filesystem configuration of the matrix (fs x layout x options)."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: devices each layout needs (RAID5 with three, the minimum that has parity striped over data)
LAYOUT_DEVICES: dict[str, int] = {"single": 1, "raid0": 2, "raid1": 2, "raid10": 4, "raid5": 3}
#: options whose value adds devices of the case's own beside its layout's (ZFS's log, cache and
#: special vdevs): the values each takes and how many devices a value adds (a ZFS cache vdev is
#: never mirrored)
DEVICE_GROUPS: dict[str, dict[str, int]] = {
    "log": {"none": 0, "single": 1, "mirror": 2},
    "cache": {"none": 0, "single": 1},
    "special": {"none": 0, "single": 1, "mirror": 2},
}
#: the most devices a case can need: the largest layout with every group at its largest
MOST_DEVICES = max(LAYOUT_DEVICES.values()) + sum(max(sizes.values()) for sizes in DEVICE_GROUPS.values())


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
    #: --storage-rate: MB/s its loop images' reads and writes are paced to (0: the image directory's own
    #: speed); ids show it (storage=32MBps), so a case on slowed storage is never compared as the same case
    storage_rate: float = 0.0

    @property
    def in_guest(self) -> bool:
        return self.kernel != "host"

    @property
    def devices_needed(self) -> int:
        """The layout's devices and those its options add (device_groups)."""
        return LAYOUT_DEVICES[self.layout] + sum(count for _, count in self.device_groups())

    def device_groups(self) -> tuple[tuple[str, int], ...]:
        """(option, devices) for each option that adds devices of its own, in DEVICE_GROUPS' order:
        their devices follow the layout's, in that order."""
        return tuple((key, DEVICE_GROUPS[key].get(value, 0)) for key in DEVICE_GROUPS
                     if (value := self.option(key)) and DEVICE_GROUPS[key].get(value, 0))

    @property
    def id(self) -> str:
        parts = [self.kernel] if self.in_guest else []
        parts += [self.fs, self.layout]
        parts += [f"{key}={value}".replace(" ", "_") for key, value in self.options
                  if self.shown is None or key in self.shown]
        parts += [storage_part(self.storage_rate)] if self.storage_rate else []
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
        if self.storage_rate:
            found["storage_rate"] = self.storage_rate
        return found

    def options_text(self) -> str:
        return ",".join(f"{key}={value}" for key, value in self.options) or "none"


def options_from_text(text: str) -> dict[str, str]:
    """A case's options from their text (CaseSpec.options_text, a stored Series.options: "a=1,b=x y"
    or "none"); a comma inside a value (mkfs='-O a,b') stays in it."""
    if not text or text == "none":
        return {}
    found: dict[str, str] = {}
    key = None
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if eq and re.fullmatch(r"[A-Za-z_][\w-]*", name):
            key, found[name] = name, value
        elif key is not None:
            found[key] += "," + part
    return found


#: a paced case's kind's suffix (--storage-rate): its runs wait for that storage
PACED = "paced"


def storage_part(rate: float) -> str:
    """The part of a case's id naming the rate its storage is paced to: storage=32MBps."""
    return f"storage={rate:g}MBps"


def is_paced(test_id: str) -> bool:
    """Whether a test's id (test_iozone[btrfs-single-storage=32MBps-16M]) names paced storage."""
    return "-storage=" in test_id.rpartition("[")[2]


def case_kind(function: str, kernel: str = "host", paced: bool = False) -> str:
    """A case's kind, whose runs take alike, as the plan of a study and the session's estimate of
    the time left both key it: its test function, its kernel when a guest's ("test_iozone vm"),
    and "paced" on paced storage (--storage-rate), whose runs wait for that storage."""
    found = function if kernel == "host" else f"{function} {kernel}"
    return f"{found} {PACED}" if paced else found
