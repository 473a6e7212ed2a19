"""Build a target (devices -> filesystem -> mountpoint) and always tear it down.

How a run is measured on a target is the measurement's (measurement.measure_run), which reads targets: whoever
builds one passes that function in (`measure`), so this module never imports the measurement module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case import CaseSpec
from .devices import Device, DeviceProvider
from ..errors import CommandError, FsbenchError, ParseError
from ..filesystems import BuildContext, Filesystem
from ..filesystems.base import mounted_options
from .mounts import FINDMNT_COLUMNS, MountOf, mounts_under, parse_findmnt
from ..system.commands import Executor
from ..system.memory import MemoryLimit
from .undo import UndoStack, execute_with_retries
from ..workloads.base import Workload

log = logging.getLogger("fsbench.target")


class TeardownError(FsbenchError):
    """Something made for a target could not be removed; the message names it."""


class NotOnTarget(FsbenchError):
    """What was to be measured on the target lives on another filesystem."""


#: one measured run of a workload on a target: measurement.measure_run(workload, target, run, cache), or the
#: guest agent's version of it; returns the measurement's Measurement
Measure = Callable[[Workload, "Target", Executor, str], Any]


def stored_spec(spec: CaseSpec, manifest: dict) -> dict[str, object]:
    """A case as the store keeps it: its spec, and its options as the kernel applied them
    ("mounted"; read back from findmnt or zfs get when the target was built, where it was)."""
    mounted = manifest.get("mounted_options")
    return {**spec.to_dict(), **({"mounted": mounted} if mounted else {})}


@dataclass
class Target:
    """A mounted filesystem under test and how it was made."""

    spec: CaseSpec
    driver: Filesystem
    context: BuildContext
    devices: tuple[Device, ...]
    commands: list[tuple[str, ...]]
    scratch: Path  # the session's scratch directory, off the target
    measurer: Measure | None = field(default=None, repr=False)  # given by build_target's caller
    manifest: dict[str, object] = field(default_factory=dict)
    _proven: dict[str, tuple] = field(default_factory=dict, repr=False)  # path -> (st_dev, measured_on, mount)
    #: workloads whose once-per-target preparation is done (measurement.prepare)
    prepared: set[tuple] = field(default_factory=set, repr=False)

    @property
    def mountpoint(self) -> Path:
        return Path(self.context.mountpoint)

    def workdir(self) -> Path:
        """The directory the measured files live in, made on the target's filesystem."""
        workdir = self.mountpoint / "fsbench"
        workdir.mkdir(exist_ok=True)
        return workdir

    @property
    def id(self) -> str:
        return self.spec.id

    def stored_spec(self) -> dict[str, object]:
        return stored_spec(self.spec, self.manifest)

    def check_holds(self, path: Path, execute: Executor) -> MountOf:
        """The mount path is on, which must be this target's; NotOnTarget naming both otherwise (a
        number measured elsewhere must never be filed under this target's name). A path proven
        once is proven again by its device number alone (every mount has its own), so a run
        asks findmnt only when something changed."""
        device = _device_of(path)
        proven = self._proven.get(str(path))
        if proven is not None and device is not None and device == proven[0]:
            self.manifest["measured_on"] = proven[1]
            return proven[2]
        mount = parse_findmnt(execute([*FINDMNT_COLUMNS, str(path)], timeout=60).stdout)
        if mount.target != str(self.mountpoint):
            raise NotOnTarget(f"{self.id}: {path} is on {mount.target} ({mount.source}, {mount.fstype}), not on "
                              f"the target mounted at {self.mountpoint}; nothing measured there is this case's")
        self.manifest["measured_on"] = {"path": str(path), "mountpoint": mount.target, "source": mount.source,
                                        "fstype": mount.fstype}
        if device is not None:
            self._proven[str(path)] = (device, self.manifest["measured_on"], mount)
        return mount

    def measure(self, workload: Workload, execute: Executor, cache: str, limit: MemoryLimit | None = None):
        """One measured run of workload on this target (measurement.measure_run); its Measurement.
        limit: the run's commands go in that memory control group, recorded in the manifest."""
        if self.measurer is None:
            raise FsbenchError(f"{self.id}: this target was built without a way to measure it")
        measured = self.measurer(workload, self, execute if limit is None else limit.executor(execute), cache)
        if limit is not None:
            self.manifest["memory_limit"] = limit.record()
        return measured

    def free_bytes(self, execute: Executor) -> int:
        """Bytes free on the target, asked of df with a timeout: statfs of a FUSE mount whose
        daemon hangs waits for ever, a command is killed after its timeout."""
        listing = execute(["df", "--output=avail", "--block-size=1", str(self.mountpoint)], timeout=60).stdout
        return int(listing.split()[-1])

    def member_devices(self) -> list[str]:
        """The devices that carry the target's I/O (the disks under an md array or pool)."""
        return [d.path for d in self.devices]

    def compression_ratio(self, execute: Executor) -> float | None:
        """The filesystem's achieved compression ratio for fsbench's files, if it compresses."""
        argv = self.driver.compression_argv(self.spec, self.context)
        if argv is None:
            return None
        execute(["sync"])
        done = execute(list(argv), timeout=300, check=False)
        output = done.output
        if "No files" in output:  # compsize: nothing under fsbench's directory to measure
            return None
        if done.returncode != 0:
            raise CommandError(list(argv), done.returncode, output)
        try:
            return self.driver.parse_compression(output)
        except ValueError as exc:
            raise ParseError(argv[0], str(exc), output) from None

    def evict_caches(self, execute: Executor) -> None:
        """Unmount and mount again (ZFS: export and import the pool), each command tried again
        while what it removes is busy for a moment after the run's I/O (zfs-fuse: "cannot export:
        pool is busy" failed a bench's case beside other jobs), as a teardown's are."""
        for argv in self.driver.evict_plan(self.spec, self.context):
            execute_with_retries(execute, list(argv))


def describe(target: Target, execute: Executor) -> dict[str, str]:
    """Outputs of the driver's describe commands: options as actually applied."""
    out = {}
    argvs = dict(target.driver.describe_argvs(target.spec, target.context))
    if target.driver.version_argv:
        argvs["version"] = target.driver.version_argv
    for key, argv in argvs.items():
        try:
            out[key] = execute(list(argv), timeout=60).output.strip()
        except CommandError as exc:
            out[key] = f"unavailable: {exc}".splitlines()[0]
    return out


def _device_of(path: Path) -> int | None:
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


@contextlib.contextmanager
def build_target(
    spec: CaseSpec,
    driver: Filesystem,
    provider: DeviceProvider,
    execute: Executor,
    session_dir: Path,
    name: str,
    scratch: Path,
    measure: Measure,
) -> Iterator[Target]:
    """Yield a mounted target whose runs `measure` measures (measurement.measure_run); on exit (also on
    error or Ctrl-C) undo everything that was done."""
    undo = UndoStack(execute, f"the teardown of {spec.id} ({name})")
    try:
        yield _build(spec, driver, provider, execute, session_dir, name, scratch, undo, measure)
    except BaseException as exc:
        for error in undo.unwind():
            exc.add_note(f"teardown of {spec.id} ({name}) also failed: {error}")
        raise
    errors = undo.unwind()
    if errors:
        raise TeardownError(f"teardown of {spec.id} ({name}) left something behind: " + "; ".join(errors))


def unmount_if_mounted(mountpoint: Path, execute: Executor) -> None:
    """A mount the plan's own undo could not remove (a FUSE mount whose daemon died): unmount it,
    lazily when it is busy."""
    if str(mountpoint) not in mounts_under(mountpoint.parent):
        return
    if execute(["umount", str(mountpoint)], check=False, timeout=120).returncode != 0:
        execute(["umount", "--lazy", str(mountpoint)], timeout=120)


def _build(spec, driver, provider, execute, session_dir, name, scratch, undo, measure) -> Target:
    workdir = session_dir / "dev" / name
    mountpoint = session_dir / "mnt" / name
    workdir.mkdir(parents=True)
    undo.push(lambda: shutil.rmtree(workdir, ignore_errors=True))
    mountpoint.mkdir(parents=True)
    # rmdir, never rmtree: if the unmount failed, the directory still holds the filesystem
    undo.push(lambda: unmount_if_mounted(mountpoint, execute), mountpoint.rmdir)
    devices = provider.acquire(spec.devices_needed, name, undo)
    context = BuildContext(name, tuple(d.path for d in devices), str(mountpoint), str(workdir))
    commands = []
    for step in driver.plan(spec, context):
        commands.append(step.argv)
        try:
            execute(list(step.argv))
        except BaseException:
            # a failed step may have done half its work (a pool made, then an error)
            undo.push(*step.undo, best_effort=True, gone=step.gone)
            raise
        undo.push(*step.undo, gone=step.gone)
    target = Target(spec, driver, context, tuple(devices), commands, scratch, measurer=measure)
    target.manifest = {
        "case": spec.to_dict(),
        "devices": [d.to_dict() for d in devices],
        "commands": [" ".join(argv) for argv in commands],
        "applied": describe(target, execute),
    }
    mounted = mounted_options(spec.options, target.manifest["applied"], driver.shows_non_defaults)
    if spec.options and mounted is not None:
        target.manifest["mounted_options"] = mounted
    return target
