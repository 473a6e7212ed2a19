"""The state of one fsbench session: its settings and host facts, its row in the result store and
the baseline it compares with, its results, and (through Targets) the targets it builds. The
pytest plugin keeps one of these in config.stash; nothing here imports pytest."""

from __future__ import annotations

import contextlib

import datetime as dt
import os
import platform
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import __version__
from .system import processes
from .case import CaseSpec
from .system.host import Host, slurm_job
from .options import FLAG, OPTIONAL
from .settings import OPTIONS, Settings
from .verdicts import drift
from .verdicts.baseline import Baseline
from .verdicts.disturbance import load_of
from .verdicts.drift import Drift
from .kernels.vm import planned_emulation
from .store.facts import BISECT, STUDY, case_options, check_emulation, emulations, runner, selection
from .workloads import PARAMS as WORKLOAD_PARAMS
from .verdicts.gate import Gate
from .store.databases import redact_args
from .errors import UsageError
from .store.results import Store, StoreError
from .system.commands import Executor
from .provisioning import Targets
from .views.answer import Compared, session_answer
from .measure.progress import history_prior, kind_of_stored

RUN_ROOT = Path("/run/fsbench")


def git_commit(top: Path = Path(__file__).resolve().parent.parent) -> str | None:
    """The commit of the fsbench checkout this runs from, if it is one: read from its .git
    directory, or the directory a worktree's .git file names; a branch's commit from its ref file
    or, once git packed it, from packed-refs (either left it unknown)."""
    try:
        git = top / ".git"
        if git.is_file():  # a worktree's: "gitdir: PATH"
            git = (top / git.read_text().strip().removeprefix("gitdir: ")).resolve()
        ref = (git / "HEAD").read_text().strip()
        if not ref.startswith("ref: "):
            return ref  # a detached HEAD
        name = ref.removeprefix("ref: ")
        shared = git / "commondir"  # a worktree's branches are in the repository's own directory
        common = (git / shared.read_text().strip()).resolve() if shared.is_file() else git
        for where in (git, common):
            if (where / name).is_file():
                return (where / name).read_text().strip()
        packed = (common / "packed-refs").read_text() if (common / "packed-refs").is_file() else ""
        return next((sha for sha, _, found in (line.partition(" ") for line in packed.splitlines())
                     if found == name), None)
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
    a session of another machine is taken as live): the process that resumed it last, if one did."""
    resumer = manifest.get("resumed_by")
    if isinstance(resumer, dict):
        manifest = resumer
    if manifest.get("hostname", platform.node()) != platform.node():
        return True
    process = manifest.get("process")
    if process:
        return processes.identity_alive(str(process))
    pid = token.split("-", 1)[0]
    return pid.isdigit() and processes.alive(int(pid))


def ran_record(settings: Settings) -> dict[str, object]:
    """What a session runs, as asked (kept in the store's session row for `fsbench sessions`):
    its filesystems, layouts, filesystem options, paired variants, kernels and test selection."""
    variants = {b for _, b in settings.pairs}  # said as paired, not as options of the session's cases
    options = sorted({f"{spec.fs}:{key}={value}" for spec in settings.specs if spec not in variants
                      for key, value in spec.options})
    return {"filesystems": list(settings.filesystems), "layouts": list(settings.layouts), "options": options,
            "paired": sorted({b.id for _, b in settings.pairs}), "kernels": [k.label for k in settings.kernels],
            "selection": selection(settings.args, {o.flag for o in OPTIONS if o.kind not in (FLAG, OPTIONAL)}
                                   | {f"--{param.name}" for param in WORKLOAD_PARAMS})}


def session_request(settings: Settings, environ: Mapping[str, str]) -> dict[str, object]:
    """What the store keeps of the session's request: its command line, what it runs, and the
    study and scale it runs for when `fsbench study` started it (STUDY; a later plan of the study
    takes its times from such sessions), and the bisect step it measures for `fsbench bisect` (BISECT)."""
    request: dict[str, object] = {"argv": redact_args(settings.args), "ran": ran_record(settings)}
    if environ.get(STUDY):
        request["study"] = environ[STUDY]
    if environ.get(BISECT):
        request["bisect"] = environ[BISECT]
    return request


def resume_problem(session_id: int, status: str, live: bool, stored: Sequence[str], argv: Sequence[str],
                   manifest: dict | None = None) -> str | None:
    """Why --resume cannot take this session, or None: only an interrupted session (or one left
    running by a process that is gone), with the same cases and options."""
    if status not in ("interrupted", "running") or (status == "running" and live):
        why = f"is still running ({runner(manifest or {})})" if status == "running" else f"is {status}"
        return (f"--resume={session_id}: session {session_id} {why}; only an interrupted session can be resumed, "
                "by one process at a time")
    before, now = case_options(stored), case_options(argv)
    if before != now:
        gone = [w for w in before if w not in now]
        new = [w for w in now if w not in before]
        return (f"--resume={session_id}: session {session_id} ran with {' '.join(before) or 'no options'}; this "
                f"command {'drops ' + ' '.join(gone) if gone else ''}{'; ' if gone and new else ''}"
                f"{'adds ' + ' '.join(new) if new else ''}: resume with the same cases and options")
    return None


def ending(interrupted: bool, measured: bool, failed: int) -> str:
    """A finished session's status: interrupted, complete (it measured), failed (it measured
    nothing and tests failed) or empty (nothing measured, nothing failed: every case skipped)."""
    if interrupted:
        return "interrupted"
    if measured:
        return "complete"
    return "failed" if failed else "empty"


class FsbenchSession:
    def __init__(self, settings: Settings, host: Host, execute: Executor, run_root: Path = RUN_ROOT) -> None:
        self.settings = settings
        self.host = host
        self.execute = execute
        self.token = f"{os.getpid()}-{secrets.token_hex(2)}"
        self.started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.targets = Targets(settings, host, execute, self.token, run_root, self.started)
        self.results: list = []  # bench.CaseResult of each measured workload, for the summary
        self._store: Store | None = None
        self._session_id: int | None = None
        self.resumed = settings.resume is not None
        self.finished_tests: set[str] = set()
        self.baseline: Baseline | None = None  # what --compare names
        self.gate = gate_for(settings, None)  # the regression gate; its baseline once the store is open
        self.thresholds_applied: set[str] = set()  # texts of the thresholds some measured value met
        self.saved: str | None = None  # what --save saved, for the terminal
        self.store_failure: str | None = None  # the store's first failure mid-session: the session stops

    def store_failed(self, exc: StoreError) -> str:
        """The one line that stops the session when the store fails mid-session (full, made
        immutable, gone): nothing more could be recorded, so nothing more is measured."""
        if self.store_failure is None:
            if getattr(exc, "remedy", None):  # its file removed: kept elsewhere, said where
                self.store_failure = f"fsbench: {exc}; the session stops here; {exc.remedy}"
            else:
                self.store_failure = (f"fsbench: {exc}; the session stops here, as nothing more can be recorded "
                                      "(runs recorded before are kept); free room on its filesystem or make it "
                                      "writable, then --resume")
        return self.store_failure

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
                stored = store.session_export(self._session_id)["session"]
                problem = resume_problem(self._session_id, stored["status"],
                                         session_is_live(stored["token"], stored["manifest"]),
                                         stored["args"].get("argv", []), redact_args(settings.args), stored["manifest"])
                if problem:
                    raise UsageError(problem)
                taken = store.reopen_session(self._session_id, stored, {**self.resumer(), "at": self.started})
                if taken is not None:  # another process took it between our reading and our writing
                    flag = "--resume" if settings.resume == "last" else f"--resume={settings.resume}"
                    raise UsageError(f"{flag}: session {self._session_id} was taken by another process just now "
                                     f"({runner(taken)}); only one process resumes a session")
                self.finished_tests = store.finished_tests(self._session_id)
            else:
                self._session_id = store.start_session(self.token, session_request(settings, os.environ),
                                                       self.host_manifest())
            store.reserve_room()  # issue 34: a store whose filesystem filled could not record the end
            if settings.compare:
                self.baseline = resolve_baseline(store, settings, self._session_id)
                self.gate = gate_for(settings, self.baseline)
                self.gate.check_can_fire(settings.compare)
        except BaseException as exc:
            if self._session_id is not None and not settings.resume:
                try:
                    store.discard_session(self._session_id)  # refused before it measured: no session to keep
                except StoreError:
                    pass  # the store that failed below fails this too; the session row says running
            store.close()
            if isinstance(exc, StoreError):  # issue 34: a store locked by another process was an INTERNALERROR
                raise UsageError(f"{exc}: nothing was measured; run again once the other process is done with it, "
                                 f"or name another --store") from None
            raise
        self._store = store

    @property
    def recorded(self) -> bool:
        """Whether this session has a row in the store (none until a case needs it)."""
        return self._session_id is not None

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

    def forget(self) -> None:
        """Forget the row of a session that measures nothing by design (--collect-only: its
        --compare or --resume was checked) or was refused by a usage error found once the store was
        open (--compare, --save and --resume open it at once), before anything ran: it is no session
        of the store. A resumed session is interrupted again, as it was."""
        if self._store is None or self._session_id is None:
            return
        if self.settings.resume:
            self._store.finish_session(self._session_id, "interrupted")
        else:
            self._store.discard_session(self._session_id)
        self._store.close()
        self._store = None

    def end_cut_short(self) -> bool:
        """A second stop signal cut the session's end short: a session whose end was not recorded yet
        is recorded interrupted (found by issue 44's sweep: it stayed 'running'), so `fsbench
        sessions` says so and --resume takes it; whether it was. Stop signals are ignored by then."""
        if self._store is None or self._session_id is None:
            return False
        with contextlib.suppress(StoreError):
            if self._store.status(self._session_id) == "running":
                self._store.finish_session(self._session_id, "interrupted")
                return True
        return False

    def finish(self, interrupted: bool, tests_left: int, failed: int = 0) -> list[str]:
        """Record how the session ended: interrupted when it was interrupted or a case did not
        finish its runs (tests_left: collected tests that never reported); else complete when it
        measured something, failed when it measured nothing and tests failed (failed: how many),
        empty when every case was skipped. Save it as a baseline if asked. Returns the problems
        that fail the session."""
        if self._store is None:
            return []
        unfinished = self.store.unfinished_cases(self.session_id)
        status = ending(interrupted or bool(unfinished) or bool(tests_left) or self.store_failure is not None,
                        self.store.measured_runs(self.session_id) > 0, failed)
        try:
            self.store.finish_session(self.session_id, status)
        except StoreError:
            if not self.store.release_room():  # the room kept for this, if its filesystem filled up
                raise
            self.store.finish_session(self.session_id, status)
        if self.store_failure is not None:
            return []
        if self.settings.save is None:
            return []
        if status == "interrupted":
            left = f"{len(unfinished)} case(s) did not finish their runs" if unfinished else "it was interrupted"
            return [f"not saved as baseline {self.settings.save!r}: {left} (--resume finishes it)"]
        if status != "complete":
            return [f"not saved as baseline {self.settings.save!r}: no case was measured (all were skipped "
                    "or failed), so it could gate nothing"]
        self.store.save_baseline(self.settings.save, self.session_id)
        held = self.store.baseline_sessions(self.settings.save)
        budget = (f" with {self.settings.repeat.runs} runs a case (--max-runs, the gate's budget: a baseline's runs "
                  "fix how small a change every later comparison with it can catch; --runs=N measures fewer)"
                  if self.settings.save_budget else "")
        self.saved = (f"saved session {self.session_id} as baseline {self.settings.save!r}{budget}: it holds "
                      f"{len(held)} session{'s' * (len(held) > 1)} ({', '.join(map(str, held))}); "
                      f"--compare={self.settings.save} gates against it")
        return []

    def history_prior(self, newest: int = 5) -> dict[str, float]:
        """For the estimate of the time left when no plan gives one: the seconds of a case of each
        kind, from the newest of this machine's complete sessions (up to `newest`) that ran that
        kind, at this session's runs a case (an interleaved round: its warm-up and one run)."""
        if self._store is None:
            return {}
        rows = sorted((row for row in self.store.sessions(host=platform.node())
                       if row.status == "complete" and row.id != self._session_id), key=lambda row: -row.id)
        found: dict[str, list] = {}
        for row in rows[:newest]:
            mine: dict[str, list] = {}
            for timing in self.store.test_times(row.id):
                mine.setdefault(kind_of_stored(timing), []).append(timing)
            for kind, timings in mine.items():
                found.setdefault(kind, timings)
        repeat = self.settings.repeat
        return history_prior([t for timings in found.values() for t in timings],
                             repeat.warmup + (1 if self.settings.interleave else repeat.runs))

    def answer(self) -> list[Compared]:
        """Every comparison of the session, as the answer at the top of its summary says them
        (views/answer.py): against the baseline (its options and host kernel where they differ
        from this session's), and each --paired (or kernel A/B) variant against its reference."""
        pairs = {b.id: (a.to_dict(), b.to_dict()) for a, b in self.settings.pairs}
        kernels = ("", "")
        if self.baseline is not None:
            theirs = self.store.manifests([self.baseline.newest]).get(self.baseline.newest, {}).get("kernel", "")
            if theirs and theirs != self.host.kernel:
                kernels = (theirs, self.host.kernel)
        return session_answer(self.results, pairs, self.settings.compare, self.baseline_bases(), kernels,
                              f"session {self.session_id}")

    def baseline_bases(self) -> dict:
        """Each series of the baseline by its key: the newest of them (whose options the answer and
        the comparison table name where they were others); {} without a baseline."""
        if self.baseline is None:
            return {}
        return {key: found[-1] for key, found in self.baseline.series().items() if found}

    def ungated(self) -> list[str]:
        """A --fail-on-regression that compared nothing gated nothing (see gate.Gate.ungated)."""
        return self.gate.ungated([(r.case_id, r.series, r.judgement) for r in self.results], self.settings.compare)

    def unapplied_thresholds(self) -> list[str]:
        """The --threshold rules that applied to no measured value: they checked nothing."""
        return [f"threshold {t.text!r} applied to no measured value: no case of this session measured "
                f"{t.metric}{' in ' + t.scope if t.scope else ''}, so it checked nothing"
                for t in self.settings.thresholds if t.text not in self.thresholds_applied]

    def target(self, spec: CaseSpec):
        """A freshly built, mounted target for the case (a context manager)."""
        return self.targets.target(spec, self.host_manifest())

    def resumer(self) -> dict[str, object]:
        """What a resumed session's row says of the process that resumes it (session_is_live)."""
        return {"process": processes.identity(), "hostname": platform.node()}

    def host_manifest(self) -> dict[str, object]:
        manifest = {
            "hostname": platform.node(), "kernel": self.host.kernel, "ram_bytes": self.host.ram_bytes,
            "cpu": cpu_model(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "fsbench": __version__, "fsbench_commit": git_commit(), "zfs_implementation": self.host.zfs_impl,
            "devices": "loop" if not self.settings.devices else "block", "process": processes.identity(),
        }
        job = slurm_job(os.environ)  # a fleet's session: the Slurm job it ran in (fleet.py finds it by that)
        return manifest if job is None else {**manifest, "slurm_job": job}

    def close(self) -> list[str]:
        """End of session: close the store, release what the targets needed; what a teardown cut
        short left, for the user (targets.Targets.close)."""
        if self._store is not None:
            self._store.close()
        return self.targets.close()


def same_host(store: Store, settings: Settings, current: int, ids: list[int]) -> list[int]:
    """The baseline's sessions of this machine (a name a fleet shares holds every machine's);
    all of them with --across-hosts. Only other machines' is refused: a different disk, CPU or
    kernel is a different experiment."""
    if settings.across_hosts:
        return ids
    hosts = store.hosts([current, *ids])
    mine = [i for i in ids if hosts[i] in (hosts[current], "")]  # a session recorded without a host: unknown
    if ids and not mine:
        others = sorted({hosts[i] for i in ids})
        raise UsageError(f"--compare {settings.compare}: its sessions ran on {', '.join(others)} and this one runs on "
                         f"{hosts[current]}; a different machine is a different experiment: compare with a baseline "
                         "saved on this machine, or pass --across-hosts to compare across machines anyway")
    return mine


def resolve_baseline(store: Store, settings: Settings, current: int) -> Baseline:
    """The baseline --compare names, of this machine's sessions before this one, checked that a
    gate on it can fire."""
    ids = [i for i in store.baseline_sessions(settings.compare, before=current) if i != current]
    ids = same_host(store, settings, current, ids)
    theirs: dict[str, str | None] = {}
    for session_id in ids:
        theirs.update(emulations(store.case_manifests(session_id)))
    check_emulation(theirs, planned_emulation(settings.specs, settings.kernels), f"--compare {settings.compare}")
    calm = load_of(s for i in ids for s in store.series(i))  # the baseline's: the drift leaves busier sessions out
    # the machine's drift, assumed until its history tells (issue 41: a one-session baseline compared run
    # by run failed 37-44 % of unchanged sessions that drifted by 10-24 %)
    machine = (drift.for_gate(store, store.hosts([current])[current], exclude=[current], calm=calm)
               if settings.drift == "machine" else None)
    baseline = baseline_from_settings(store, settings, ids, machine)
    baseline.check()
    return baseline


def baseline_from_settings(store: Store, settings: Settings, session_ids: list[int],
                           machine: Drift | None = None) -> Baseline:
    repeat = settings.repeat
    return Baseline(store, settings.compare or "", session_ids, alpha=settings.alpha,
                    looks=repeat.looks if repeat.sequential else (), control=settings.control, drift=machine,
                    adjust=settings.control_adjust)


def gate_for(settings: Settings, baseline: Baseline | None) -> Gate:
    """The session's regression gate from its settings (the one place they become a Gate)."""
    repeat = settings.repeat
    return Gate(settings.regression_rules, baseline, alpha=settings.alpha, on_inconclusive=settings.on_inconclusive,
                max_runs=repeat.max_runs, looks=repeat.looks,
                sequential=repeat.sequential, control=settings.control, control_adjust=settings.control_adjust)
