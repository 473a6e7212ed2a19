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
from .mounts import mounts_under
from .devices import BlockDevices, DeviceProvider, LoopDevices
from .filesystems import driver
from .gate import RegressionRule
from .host import Host
from .repeat import RepeatPolicy
from .store import Store
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
    caches: tuple[str, ...] = ("drop",)
    datas: tuple[str, ...] = ("random",)
    store_path: Path = Path("fsbench-results/fsbench.db")
    repeat: RepeatPolicy = RepeatPolicy()
    interleave: bool = False
    save: str | None = None
    compare: str | None = None
    resume: str | None = None
    regression_rules: tuple[RegressionRule, ...] = ()
    alpha: float = 0.05
    args: tuple[str, ...] = ()

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


def git_commit() -> str | None:
    """The commit of the fsbench checkout this runs from, if it is one."""
    head = Path(__file__).resolve().parent.parent / ".git" / "HEAD"
    try:
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            return (head.parent / ref[5:]).read_text().strip()
        return ref
    except OSError:
        return None


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
        self.started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.zfsd = ZfsFuseDaemon(run, self.rundir / "zfs-fuse.pid")
        self.results: list = []  # bench.CaseResult of each measured workload, for the summary
        self._count = 0
        self._store: Store | None = None
        self._session_id: int | None = None
        self.resumed = settings.resume is not None
        self.finished_tests: set[str] = set()
        self.baseline_id: int | None = None
        self._baseline: dict | None = None
        if settings.resume or settings.compare or settings.save:
            self.open_store()  # a bad --resume/--compare is a usage error before anything runs

    def open_store(self) -> None:
        """Open the result store and start (or reopen) this session's row in it; once."""
        if self._store is not None:
            return
        settings = self.settings
        self._store = store = Store(settings.store_path)
        if settings.resume:
            self._session_id = store.last_unfinished() if settings.resume == "last" else store.resolve(settings.resume)
            store.reopen_session(self._session_id)
            self.finished_tests = store.finished_tests(self._session_id)
        else:
            self._session_id = store.start_session(self.token, {"argv": list(settings.args)}, self.host_manifest())
        if settings.compare:
            self.baseline_id = store.resolve(settings.compare, before=self._session_id)

    @property
    def store(self) -> Store:
        self.open_store()
        assert self._store is not None
        return self._store

    @property
    def session_id(self) -> int:
        self.open_store()
        assert self._session_id is not None
        return self._session_id

    def baseline_series(self) -> dict | None:
        """The baseline session's samples by series key (None without --compare)."""
        if self.baseline_id is None:
            return None
        if self._baseline is None:
            self._baseline = {s.key: s for s in self.store.series(self.baseline_id)}
        return self._baseline

    def finish(self, interrupted: bool) -> str | None:
        """Mark the session complete or interrupted; save it as a baseline if asked. Returns a
        note for the user when the baseline was not saved."""
        if self._store is None:
            return None
        self.store.finish_session(self.session_id, "interrupted" if interrupted else "complete")
        if self.settings.save is None:
            return None
        if interrupted:
            return f"not saved as baseline {self.settings.save!r}: the session was interrupted (--resume finishes it)"
        self.store.save_baseline(self.settings.save, self.session_id)
        return None

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
            "fsbench": __version__, "fsbench_commit": git_commit(), "zfs_implementation": self.host.zfs_impl,
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
        if self._store is not None:
            self._store.close()
        if self.rundir.exists() and not mounts_under(self.rundir):
            shutil.rmtree(self.rundir, ignore_errors=True)
