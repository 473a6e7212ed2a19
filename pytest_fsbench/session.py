"""The state of one fsbench session: settings, host facts, where things go, and the targets it
builds. The pytest plugin keeps one of these in config.stash; nothing here imports pytest."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .case import CaseSpec
from .cleanup import mounts_under
from .devices import BlockDevices, DeviceProvider, LoopDevices
from .filesystems import driver
from .host import Host
from .system import Runner
from .target import Target, build_target
from .thresholds import Threshold
from .zfsd import ZfsFuseDaemon

RUN_ROOT = Path("/run/fsbench")


@dataclass(frozen=True)
class Settings:
    filesystems: tuple[str, ...]
    layouts: tuple[str, ...]
    specs: tuple[CaseSpec, ...]
    devices: tuple[str, ...] = ()
    device_infos: tuple = ()  # safety.DeviceInfo of each --devices entry, once checked
    wipe: bool = False
    image_dir: Path = Path("/var/tmp/fsbench")
    image_size: int = 2 << 30
    thresholds: tuple[Threshold, ...] = ()
    results_dir: Path = Path("fsbench-results")
    caches: tuple[str, ...] = ("drop",)
    datas: tuple[str, ...] = ("random",)

    def run_specs(self) -> list[RunSpec]:
        show_cache = self.caches != ("drop",)
        show_data = self.datas != ("random",)
        return [RunSpec(cache, data, show_cache, show_data) for cache in self.caches for data in self.datas]


@dataclass(frozen=True)
class RunSpec:
    """How a case is measured: the cache policy and the data it writes."""

    cache: str = "drop"
    data: str = "random"
    show_cache: bool = False
    show_data: bool = False

    @property
    def id(self) -> str:
        parts = ([f"cache={self.cache}"] if self.show_cache else []) + ([f"data={self.data}"] if self.show_data else [])
        return "-".join(parts) or "default"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


class FsbenchSession:
    def __init__(self, settings: Settings, host: Host, run: Runner, run_root: Path = RUN_ROOT) -> None:
        self.settings = settings
        self.host = host
        self.run = run
        self.token = f"{os.getpid()}-{secrets.token_hex(2)}"
        self.rundir = run_root / self.token
        started = dt.datetime.now(dt.timezone.utc)
        self.started = started.isoformat(timespec="seconds")
        self.results_path = settings.results_dir / f"{started:%Y%m%d-%H%M%S}-{self.token}" / "results.jsonl"
        self.zfsd = ZfsFuseDaemon(run, self.rundir / "zfs-fuse.pid")
        self.recorded: list[dict[str, object]] = []
        self._count = 0

    def provider(self) -> DeviceProvider:
        if self.settings.devices:
            sizes = {info.path: info.size_bytes for info in self.settings.device_infos}
            return BlockDevices(self.settings.devices, sizes, self.run)
        return LoopDevices(self.settings.image_dir, self.settings.image_size, self.run)

    def unavailable(self, spec: CaseSpec) -> list[str]:
        reasons = driver(spec.fs, self.host).unavailable(spec, self.host)
        have = self.provider().available()
        if have is not None and have < spec.devices_needed:
            reasons.append(f"{spec.layout} needs {spec.devices_needed} devices and --devices gave {have}")
        return reasons

    def host_manifest(self) -> dict[str, object]:
        return {
            "hostname": platform.node(), "kernel": self.host.kernel, "ram_bytes": self.host.ram_bytes,
            "cpu": cpu_model(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "fsbench": __version__, "zfs_implementation": self.host.zfs_impl,
            "devices": "loop" if not self.settings.devices else "block",
        }

    def _prepare_rundir(self) -> None:
        if self.rundir.exists():
            return
        self.rundir.mkdir(parents=True)
        state = {"pid": os.getpid(), "token": self.token, "image_dir": str(self.settings.image_dir),
                 "started": self.started}
        (self.rundir / "state.json").write_text(json.dumps(state))

    @contextlib.contextmanager
    def target(self, spec: CaseSpec) -> Iterator[Target]:
        self._prepare_rundir()
        fs = driver(spec.fs, self.host)
        if spec.fs == "zfs" and self.host.zfs_impl == "zfs-fuse":
            self.zfsd.ensure()
        self._count += 1
        name = f"fsbench-{self.token}-{self._count}"
        with build_target(spec, fs, self.provider(), self.run, self.rundir, name) as target:
            target.manifest["host"] = self.host_manifest()
            yield target

    def close(self) -> None:
        """End of session: stop a zfs-fuse daemon we started, remove the run directory."""
        self.zfsd.stop()
        if self.rundir.exists() and not mounts_under(self.rundir):
            shutil.rmtree(self.rundir, ignore_errors=True)
