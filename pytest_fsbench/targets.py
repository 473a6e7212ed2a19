"""Where a session's targets come from: the devices (loop images or real disks), the run
directory their mounts live in, the scratch directory beside the images, and the zfs-fuse daemon
ZFS cases share with other sessions. Builds each case's target and tears it down."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from . import processes
from .case import CaseSpec
from .devices import BlockDevices, DeviceProvider, LoopDevices
from .filesystems import driver
from .host import Host
from .mounts import mounts_under
from .settings import Settings
from .system import Runner
from .target import Target, build_target
from .zfsd import ZfsFuseDaemon


class Targets:
    def __init__(self, settings: Settings, host: Host, run: Runner, token: str, run_root: Path,
                 started: str) -> None:
        self.settings = settings
        self.host = host
        self.run = run
        self.token = token
        self.started = started
        self.rundir = run_root / token
        # staged data and workload files: on disk beside the images, named so cleanup finds them
        self.scratch = settings.image_dir / f"fsbench-{token}-scratch"
        self.zfsd = ZfsFuseDaemon(run, token)
        self._count = 0

    def provider(self) -> DeviceProvider:
        if self.settings.devices:
            sizes = {info.path: info.size_bytes for info in self.settings.device_infos}
            return BlockDevices(self.settings.devices, sizes, self.run)
        return LoopDevices(self.settings.image_dir, self.settings.image_size, self.run)

    def unavailable(self, spec: CaseSpec) -> list[str]:
        """Why this case cannot be built here (empty when it can)."""
        reasons = driver(spec.fs, self.host).unavailable(spec, self.host)
        have = self.provider().available()
        if have is not None and have < spec.devices_needed:
            reasons.append(f"{spec.layout} needs {spec.devices_needed} devices and --devices gave {have}")
        return reasons

    def uses_zfs_fuse(self, spec: CaseSpec) -> bool:
        return spec.fs == "zfs" and self.host.zfs_impl == "zfs-fuse"

    def daemon_failure(self, spec: CaseSpec) -> str | None:
        """Why a zfs-fuse case failed when its daemon is the cause, else None."""
        if not self.uses_zfs_fuse(spec) or self.zfsd.answers():
            return None
        return (f"{spec.id}: the zfs-fuse daemon stopped answering during the case (it died or was killed), "
                "taking the pool with it")

    def _prepare_rundir(self) -> None:
        if self.rundir.exists():
            return
        for _ in range(5):  # another session's close may remove the empty run root meanwhile
            with contextlib.suppress(FileNotFoundError):
                self.rundir.mkdir(parents=True)
                break
        state = {"pid": os.getpid(), "process": processes.identity(), "token": self.token,
                 "image_dir": str(self.settings.image_dir), "started": self.started}
        (self.rundir / "state.json").write_text(json.dumps(state))

    @contextlib.contextmanager
    def target(self, spec: CaseSpec, host_manifest: dict[str, object]) -> Iterator[Target]:
        """A freshly built, mounted target for the case; torn down on exit, always."""
        self._prepare_rundir()
        fs = driver(spec.fs, self.host)
        if self.uses_zfs_fuse(spec):
            self.zfsd.ensure()
        self._count += 1
        name = f"fsbench-{self.token}-{self._count}"
        with build_target(spec, fs, self.provider(), self.run, self.rundir, name, self.scratch) as target:
            target.manifest["host"] = host_manifest
            try:
                yield target
            finally:
                if self.uses_zfs_fuse(spec):
                    self.zfsd.ensure()  # a daemon that died mid-case is restarted, so teardown can run

    def close(self) -> None:
        """Release the zfs-fuse daemon (stopped if nobody else uses it), remove the scratch and run
        directories."""
        self.zfsd.release()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.rundir.exists() and not mounts_under(self.rundir):
            shutil.rmtree(self.rundir, ignore_errors=True)
            with contextlib.suppress(OSError):
                self.rundir.parent.rmdir()  # the run root, when no other session has a directory there
