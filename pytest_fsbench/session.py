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
from pathlib import Path

from . import __version__, processes
from .case import CaseSpec
from .devices import BlockDevices, DeviceProvider, LoopDevices
from .filesystems import driver
from .host import Host
from .mounts import mounts_under
from .settings import Settings
from .baseline import Baseline
from .store import Store
from .system import Runner
from .target import Target, build_target
from .zfsd import ZfsFuseDaemon

RUN_ROOT = Path("/run/fsbench")


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


def session_is_live(token: str, manifest: dict) -> bool:
    """Whether the session that wrote this row still runs (on this machine: its process lives;
    a session of another machine is taken as live)."""
    if manifest.get("hostname", platform.node()) != platform.node():
        return True
    process = manifest.get("process")
    if process:
        return processes.identity_alive(str(process))
    pid = token.split("-", 1)[0]
    return pid.isdigit() and processes.alive(int(pid))


class FsbenchSession:
    def __init__(self, settings: Settings, host: Host, run: Runner, run_root: Path = RUN_ROOT) -> None:
        self.settings = settings
        self.host = host
        self.run = run
        self.token = f"{os.getpid()}-{secrets.token_hex(2)}"
        self.rundir = run_root / self.token
        # staged data and workload files: on disk beside the images, named so cleanup finds them
        self.scratch = settings.image_dir / f"fsbench-{self.token}-scratch"
        self.started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.zfsd = ZfsFuseDaemon(run, self.token)
        self.results: list = []  # bench.CaseResult of each measured workload, for the summary
        self._count = 0
        self._store: Store | None = None
        self._session_id: int | None = None
        self.resumed = settings.resume is not None
        self.finished_tests: set[str] = set()
        self.baseline: Baseline | None = None  # what --compare names
        self.thresholds_applied: set[str] = set()  # texts of the thresholds some measured value met

    def open_store(self) -> None:
        """Open the result store and start (or reopen) this session's row in it; once. A store
        that cannot be used, a --resume or --compare that names nothing usable is a UsageError."""
        if self._store is not None:
            return
        settings = self.settings
        store = Store(settings.store_path)
        try:
            if settings.resume:
                self._session_id = (store.last_unfinished(session_is_live) if settings.resume == "last"
                                    else store.resolve(settings.resume))
                store.reopen_session(self._session_id)
                self.finished_tests = store.finished_tests(self._session_id)
            else:
                self._session_id = store.start_session(self.token, {"argv": list(settings.args)}, self.host_manifest())
            if settings.compare:
                self.baseline = Baseline.resolve(store, settings, self._session_id)
        except BaseException:
            store.close()
            raise
        self._store = store

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

    def finish(self, interrupted: bool, tests_left: int) -> list[str]:
        """Mark the session complete, or interrupted when it was interrupted or a case did not
        finish its runs (tests_left: collected tests that never reported); save it as a baseline
        if asked. Returns the problems that fail the session."""
        if self._store is None:
            return []
        unfinished = self.store.unfinished_cases(self.session_id)
        complete = not interrupted and not unfinished and not tests_left
        self.store.finish_session(self.session_id, "complete" if complete else "interrupted")
        if self.settings.save is None:
            return []
        if not complete:
            left = f"{len(unfinished)} case(s) did not finish their runs" if unfinished else "it was interrupted"
            return [f"not saved as baseline {self.settings.save!r}: {left} (--resume finishes it)"]
        if not self.store.measured_runs(self.session_id):
            return [f"not saved as baseline {self.settings.save!r}: no case was measured (all were skipped "
                    "or failed), so it could gate nothing"]
        self.store.save_baseline(self.settings.save, self.session_id)
        return []

    def unapplied_thresholds(self) -> list[str]:
        """The --threshold rules that applied to no measured value: they checked nothing."""
        return [f"threshold {t.text!r} applied to no measured value: no case of this session measured "
                f"{t.metric}{' in ' + t.scope if t.scope else ''}, so it checked nothing"
                for t in self.settings.thresholds if t.text not in self.thresholds_applied]

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
            "devices": "loop" if not self.settings.devices else "block", "process": processes.identity(),
        }

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

    def uses_zfs_fuse(self, spec: CaseSpec) -> bool:
        return spec.fs == "zfs" and self.host.zfs_impl == "zfs-fuse"

    def daemon_failure(self, spec: CaseSpec) -> str | None:
        """Why a zfs-fuse case failed when its daemon is the cause, else None."""
        if not self.uses_zfs_fuse(spec) or self.zfsd.answers():
            return None
        return (f"{spec.id}: the zfs-fuse daemon stopped answering during the case (it died or was killed), "
                "taking the pool with it")

    @contextlib.contextmanager
    def target(self, spec: CaseSpec) -> Iterator[Target]:
        self._prepare_rundir()
        fs = driver(spec.fs, self.host)
        if self.uses_zfs_fuse(spec):
            self.zfsd.ensure()
        self._count += 1
        name = f"fsbench-{self.token}-{self._count}"
        with build_target(spec, fs, self.provider(), self.run, self.rundir, name, self.scratch) as target:
            target.manifest["host"] = self.host_manifest()
            try:
                yield target
            finally:
                if self.uses_zfs_fuse(spec):
                    self.zfsd.ensure()  # a daemon that died mid-case is restarted, so teardown can run

    def close(self) -> None:
        """End of session: release the zfs-fuse daemon (stopped if nobody else uses it), remove
        the scratch and run directories."""
        self.zfsd.release()
        if self._store is not None:
            self._store.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.rundir.exists() and not mounts_under(self.rundir):
            shutil.rmtree(self.rundir, ignore_errors=True)
            with contextlib.suppress(OSError):
                self.rundir.parent.rmdir()  # the run root, when no other session has a directory there
