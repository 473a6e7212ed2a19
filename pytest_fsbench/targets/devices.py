"""Where a target's devices come from: sparse image files on loop devices (the default), or the
real block devices the user named (checked by safety.py before the session touches them)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import FsbenchError
from ..system.commands import Executor
from ..system.processes import openers
from ..system.throttle import ThrottledStorage
from .undo import UndoStack, settle

#: loop devices tried for one image before fsbench gives up on finding one nobody else holds
LOOP_TRIES = 8


@dataclass(frozen=True)
class Device:
    path: str
    size_bytes: int
    backing_file: str | None = None
    direct_io: bool | None = None
    storage_rate: float = 0.0  # MB/s its image's reads and writes are paced to (0: the image directory's own)

    def to_dict(self) -> dict[str, object]:
        found: dict[str, object] = {"path": self.path, "size_bytes": self.size_bytes,
                                    "backing_file": self.backing_file, "direct_io": self.direct_io}
        if self.storage_rate:
            found["storage_rate_mb_s"] = self.storage_rate
        return found


class DeviceProvider(Protocol):
    def available(self) -> int | None:
        """How many devices a case may use (None: as many as it needs)."""
        ...

    def acquire(self, count: int, label: str, undo: UndoStack) -> list[Device]: ...


def loop_direct_io(listing: str, device: str) -> bool | None:
    """Whether losetup --json --list reports direct I/O on for device."""
    for entry in json.loads(listing or "{}").get("loopdevices", []):
        if entry.get("name") == device:
            return str(entry.get("dio")).lower() in ("1", "true")
    return None


def loop_images(image_dir: Path, label: str, count: int) -> list[Path]:
    """The sparse images LoopDevices makes for a target named label (a guest kernel's agent
    makes them on the host too: its host removes them when the guest was stopped mid-case)."""
    return [image_dir / f"{label}-{i}.img" for i in range(count)]


@dataclass
class LoopDevices:
    """Sparse images in image_dir on loop devices with direct I/O, so the backing file's page
    cache stays out of the numbers (direct_io=False where the backing filesystem cannot do it:
    a guest kernel's hostfs)."""

    image_dir: Path
    size_bytes: int
    execute: Executor
    direct_io: bool = True

    def available(self) -> int | None:
        return None

    def acquire(self, count: int, label: str, undo: UndoStack) -> list[Device]:
        self.image_dir.mkdir(parents=True, exist_ok=True)
        return [self._one(image, undo) for image in loop_images(self.image_dir, label, count)]

    def _one(self, image: Path, undo: UndoStack) -> Device:
        with open(image, "xb") as handle:
            undo.push(lambda: image.unlink(missing_ok=True))  # before the truncate, which may fail
            handle.truncate(self.size_bytes)
        path = self._attach(image, undo)
        listing = self.execute(["losetup", "--json", "--list", "--output", "NAME,DIO", path]).stdout
        return Device(path, self.size_bytes, str(image), loop_direct_io(listing, path))


    def _attach(self, image: Path, undo: UndoStack) -> str:
        """A free loop device with image attached, one no other program holds open: another
        job's open /dev/loop0 got the image too and made its teardown fail busy (issue 34), so a
        held one stays attached (losetup --find passes it over), is detached at the end, and the
        next free one is tried."""
        direct = "on" if self.direct_io else "off"
        held = []
        for _ in range(LOOP_TRIES):
            path = self.execute(["losetup", f"--direct-io={direct}", "--find", "--show", str(image)]).stdout.strip()
            undo.push(("losetup", "--detach", path))
            others = loop_holders(path)
            if others:
                settle(self.execute)  # udev's probe of the new device holds it for a moment
                others = loop_holders(path)
            if not others:
                return path
            held.append(f"{path} by {', '.join(others)}")
        raise FsbenchError(f"{LOOP_TRIES} loop devices in a row were held open by other programs ({'; '.join(held)}); "
                           "stop them or free loop devices (losetup --list), then run again")


@dataclass
class ThrottledLoopDevices:
    """--storage-rate: sparse images on loop devices as LoopDevices makes them, but in a FUSE
    passthrough of a directory in image_dir (named by the case's label) that paces their reads and
    writes to rate MB/s; the daemon is mounted under run_dir (where fsbench cleanup unmounts what a
    killed session left) and stopped by the case's undo stack, after its loop devices are gone."""

    image_dir: Path
    size_bytes: int
    execute: Executor
    rate: float
    run_dir: Path
    storage: ThrottledStorage | None = None

    def available(self) -> int | None:
        return None

    def acquire(self, count: int, label: str, undo: UndoStack) -> list[Device]:
        self.storage = ThrottledStorage(self.image_dir / f"{label}-storage", self.run_dir / f"{label}-storage",
                                        self.rate, self.execute)
        undo.push(self.storage.stop)  # first pushed, last undone: after the loop devices and images
        self.storage.start()
        devices = LoopDevices(self.storage.mountpoint, self.size_bytes, self.execute).acquire(count, label, undo)
        return [dataclasses.replace(device, storage_rate=self.rate) for device in devices]


def loop_holders(path: str) -> list[str]:
    """What holds a loop device: kernel holders (md, dm) from sysfs, and other processes' open
    file descriptors."""
    name = Path(path).name
    holders = Path("/sys/block") / name / "holders"
    kernel = [f"{held} (kernel holder)" for held in sorted(p.name for p in holders.iterdir())] \
        if holders.is_dir() else []
    try:
        rdev = Path(path).stat().st_rdev
    except OSError:
        return kernel
    return kernel + openers(rdev)


@dataclass
class BlockDevices:
    """Real devices, used in the order given; wiped after each case so the next starts clean."""

    paths: tuple[str, ...]
    sizes: dict[str, int]
    execute: Executor

    def available(self) -> int | None:
        return len(self.paths)

    def acquire(self, count: int, label: str, undo: UndoStack) -> list[Device]:
        chosen = list(self.paths[:count])
        for path in chosen:
            undo.push(("wipefs", "--all", "--quiet", path))
        return [Device(path, self.sizes.get(path, 0)) for path in chosen]
