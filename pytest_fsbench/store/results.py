"""The one place results are stored: sessions, cases, runs, metrics and baselines, in an SQLite
file or on a PostgreSQL server many machines share (databases.py holds the two connections).

Every completed run is committed before the next starts, so a crash loses only the run in
flight. The schema is versioned and upgraded by the MIGRATIONS in order, the same on both
databases ({id} and {real} are the column types that differ).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .databases import TYPES, StoreMoved, check_store_file, check_store_place, connect
from .facts import ran, runner
from ..errors import FsbenchError, UsageError
from ..metrics import SIDE_METRICS, WORK, WORK_PER_BYTE, Direction, Metric

__all__ = ["MIGRATIONS", "BisectRow", "CaseSummary", "Series", "SeriesKey", "SessionRow", "Store", "StoreError", "Timing", "canonical",
           "check_store_file", "check_store_place", "now", "summary_text"]

def _compared_filter(column: str = "name") -> str:
    """The SQL condition a metric's row meets when it is a figure compared across sessions: a
    headline metric or a work per byte moved."""
    side = " AND ".join(f"{column} NOT LIKE '{prefix}%'" for prefix in SIDE_METRICS if prefix != WORK)
    work = ", ".join(f"'{name}'" for name in WORK_PER_BYTE)
    return f"{side} AND ({column} NOT LIKE '{WORK}%' OR {column} IN ({work}))"


MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE sessions (
        id {id}, token TEXT UNIQUE NOT NULL, started TEXT NOT NULL, finished TEXT,
        status TEXT NOT NULL, args TEXT NOT NULL, manifest TEXT NOT NULL);
    CREATE TABLE cases (
        id {id}, session_id INTEGER NOT NULL REFERENCES sessions(id),
        test TEXT NOT NULL, case_id TEXT NOT NULL, spec TEXT NOT NULL, workload TEXT NOT NULL,
        workload_params TEXT NOT NULL, cache TEXT NOT NULL, data TEXT NOT NULL,
        status TEXT NOT NULL, stopped_by TEXT, manifest TEXT NOT NULL,
        UNIQUE (session_id, test, workload, workload_params));
    CREATE TABLE runs (
        id {id}, case_row INTEGER NOT NULL REFERENCES cases(id), idx INTEGER NOT NULL,
        warmup INTEGER NOT NULL, started TEXT NOT NULL, finished TEXT NOT NULL, seconds {real} NOT NULL,
        cache_applied TEXT NOT NULL);
    CREATE TABLE metrics (
        run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, params TEXT NOT NULL,
        value {real} NOT NULL, unit TEXT NOT NULL, direction TEXT NOT NULL);
    CREATE INDEX metrics_run ON metrics(run_id);
    CREATE TABLE tests (
        session_id INTEGER NOT NULL REFERENCES sessions(id), test TEXT NOT NULL, outcome TEXT NOT NULL,
        PRIMARY KEY (session_id, test));
    CREATE TABLE baselines (
        name TEXT PRIMARY KEY, session_id INTEGER NOT NULL REFERENCES sessions(id), created TEXT NOT NULL);
    """,
    # 2: a baseline holds every session saved under its name (the gate then sees their spread)
    """
    CREATE TABLE baseline_sessions (
        name TEXT NOT NULL, session_id INTEGER NOT NULL REFERENCES sessions(id), added TEXT NOT NULL,
        PRIMARY KEY (name, session_id));
    INSERT INTO baseline_sessions (name, session_id, added) SELECT name, session_id, created FROM baselines;
    """,
    # 3: where the time goes: each run's unmeasured preparation and cache policy, each target's
    # building and tearing down (NULL in sessions recorded before)
    """
    ALTER TABLE runs ADD COLUMN prepare_seconds {real};
    ALTER TABLE runs ADD COLUMN cache_seconds {real};
    CREATE TABLE targets (
        session_id INTEGER NOT NULL REFERENCES sessions(id), test TEXT NOT NULL, case_id TEXT NOT NULL,
        build_seconds {real} NOT NULL, teardown_seconds {real} NOT NULL);
    """,
    # 4: each run's whole time in fsbench (its steps, monitoring, parsing, checks), so fsbench's
    # own share is known
    """
    ALTER TABLE runs ADD COLUMN wall_seconds {real};
    """,
    # 5: a store many sessions share grows large: a session's cases and a case's runs by index
    """
    CREATE INDEX cases_session ON cases(session_id);
    CREATE INDEX runs_case ON runs(case_row);
    CREATE INDEX baseline_sessions_session ON baseline_sessions(session_id);
    """,
    # 6: what counting a run's work took (the target's syncfs, its counters read after it: issue 41)
    """
    ALTER TABLE runs ADD COLUMN count_seconds {real};
    """,
    # 7: a bisect's record (fsbench bisect): its range, its steps (each a session of its own, by id),
    # their kernels, verdicts and times, and its result, as one document updated after every step
    """
    CREATE TABLE bisects (
        id {id}, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL, host TEXT NOT NULL,
        tree TEXT NOT NULL, good TEXT NOT NULL, bad TEXT NOT NULL, record TEXT NOT NULL);
    """,
    # 8: a finished case's summary: the runs' values of its figures compared across sessions and what
    # its manifest says of them (Store.case_summaries), so a fleet's history (changes, publish) reads a
    # row per case, not every run's metrics (issue 43: a host's year took 12 s, its summaries 0.3 s)
    """
    ALTER TABLE cases ADD COLUMN summary TEXT;
    """,
)


@dataclass(frozen=True)
class BisectRow:
    """A bisect as the store keeps it: its record is the document bisect/run.py writes."""

    id: int
    started: str
    finished: str | None
    status: str
    host: str
    tree: str
    good: str
    bad: str
    record: dict


class StoreError(FsbenchError):
    """The result store failed while in use (disk full, I/O error, a lock held too long, its file
    removed); remedy: what the user does then, where it is not the usual (free room, --resume)."""

    def __init__(self, message: str, remedy: str | None = None) -> None:
        super().__init__(message)
        self.remedy = remedy


def _guarded(method: Callable) -> Callable:
    """Turn the database's exceptions into StoreError naming the store."""

    @functools.wraps(method)
    def wrapper(self: "Store", *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except self.db.errors as exc:
            raise StoreError(f"result store {self.path}: {' '.join(str(exc).split())}") from exc

    return wrapper


def _writing(method: Callable) -> Callable:
    """A write: first the store must still be the file that was opened (databases.check_in_place);
    one removed or replaced is a StoreError saying where its content was kept, this write with it,
    and written from then on."""

    @functools.wraps(method)
    def wrapper(self: "Store", *args, **kwargs):
        try:
            self.db.check_in_place()
        except StoreMoved as exc:
            self.path = self.db.name
            if exc.rescued is None:
                raise StoreError(str(exc)) from None
            method(self, *args, **kwargs)  # what was being written is kept with the rest
            raise StoreError(str(exc), f"--store={exc.rescued} --resume continues it (or move that file back to "
                                       "where the store was, then --resume)") from None
        return method(self, *args, **kwargs)

    return wrapper


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class SeriesKey:
    """What makes samples comparable across sessions: the test, the workload configuration and
    the metric with its parameters."""

    test: str
    workload: str
    workload_params: str
    metric: str
    params: str


@dataclass(frozen=True)
class Series:
    key: SeriesKey
    case_id: str
    unit: str
    direction: Direction
    values: tuple[float, ...]
    options: str = "none"  # the case's filesystem options as asked, as CaseSpec.options_text()
    mounted: str = "none"  # and as the kernel applied them (as asked where that was not read)

    @property
    def params(self) -> dict[str, str]:
        return json.loads(self.key.params)


@dataclass(frozen=True)
class SessionRow:
    id: int
    token: str
    started: str
    finished: str | None
    status: str
    host: str = ""  # the machine it ran on (its manifest's hostname)
    manifest: dict = field(default_factory=dict, compare=False, repr=False)  # the whole of it


#: what a history needs of a case's manifest, kept in its summary: the kernel a guest ran it under,
#: its options as the kernel applied them, the gate's lines
SUMMARY_MANIFEST = ("kernel", "applied", "gate")


@dataclass(frozen=True)
class CaseSummary:
    """A finished case as a history reads it (Store.case_summaries)."""

    session_id: int
    row: int
    test: str
    case_id: str
    workload: str
    workload_params: str  # canonical JSON, as a SeriesKey holds it
    status: str
    options: str  # as asked, as Series.options
    mounted: str  # as the kernel applied them, as Series.mounted
    manifest: dict  # SUMMARY_MANIFEST's part of its manifest
    figures: list  # its figures compared across sessions: [metric, params, unit, direction, [runs' values]]

    @property
    def series(self) -> tuple[Series, ...]:
        """Its figures as series() gives them."""
        return tuple(Series(SeriesKey(self.test, self.workload, self.workload_params, name, params), self.case_id,
                            unit, DIRECTIONS[direction], tuple(values), self.options, self.mounted)
                     for name, params, unit, direction, values in self.figures)


@dataclass(frozen=True)
class Timing:
    """A test's time in a session (Store.test_times)."""

    test: str  # its node id
    kernel: str  # "host", or the label of the guest kernel its case ran under
    runs: int  # warm-up included
    run_seconds: float  # of all its runs, each whole in fsbench
    target_seconds: float | None  # building and tearing down its target (None: not recorded)


class Store:
    """The result store. Opened for writing (a session) it is made if missing; opened for reading
    (create=False) it must already be an fsbench store, and nothing is written to a file that is
    not one. location: an SQLite file's path, or a postgresql:// URL."""

    def __init__(self, location: Path | str, *, create: bool = True, option: str = "--store") -> None:
        self.db = connect(location, create, option)  # the SQL below runs on either database
        self.path = self.db.name  # as shown: a URL without its password
        try:
            migrate(self.db)
        except self.db.errors as exc:
            self.db.close()
            raise UsageError(f"the result store {self.path} cannot be used: {exc}; name another {option}") from None
        except UsageError:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    def reserve_room(self) -> None:
        """Keep room on the store's filesystem for recording the session's end (an SQLite file's)."""
        self.db.reserve_room()

    def release_room(self) -> bool:
        """Give that room back, so the end can be written on a filesystem that filled up."""
        return self.db.release_room()

    # --- sessions ------------------------------------------------------------------------------

    @_guarded
    @_writing
    def start_session(self, token: str, args: dict[str, object], manifest: dict[str, object]) -> int:
        row = self.db.execute(
            "INSERT INTO sessions (token, started, status, args, manifest) VALUES (?, ?, 'running', ?, ?) RETURNING id",
            (token, now(), canonical(args), canonical(manifest))).fetchone()
        return int(row[0])

    @_guarded
    @_writing
    def discard_session(self, session_id: int) -> None:
        """Forget a session that recorded nothing (refused before its first case)."""
        self.db.execute("DELETE FROM sessions WHERE id = ? AND NOT EXISTS (SELECT 1 FROM cases WHERE session_id = ?)",
                        (session_id, session_id))

    @_guarded
    @_writing
    def reopen_session(self, session_id: int, seen: dict[str, object], resumer: dict[str, object]) -> dict | None:
        """Take a session to resume as it was seen (its status and manifest): its status is running
        again and its manifest names the resuming process (resumer, as `resumed_by`). One
        statement that matches the row only as it was seen, so of two processes resuming it at
        once only one takes it (issue 44: both measured, into one sequence of runs). None when
        taken; else the row's manifest now (whoever took it first)."""
        manifest = {**seen["manifest"], "resumed_by": resumer}  # type: ignore[dict-item]
        taken = self.db.execute("UPDATE sessions SET status = 'running', finished = NULL, manifest = ?"
                                " WHERE id = ? AND status = ? AND manifest = ?",
                                (canonical(manifest), session_id, seen["status"], canonical(seen["manifest"])))
        if taken.rowcount == 1:
            return None
        row = self.db.execute("SELECT manifest FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    @_guarded
    @_writing
    def finish_session(self, session_id: int, status: str) -> None:
        self.db.execute("UPDATE sessions SET status = ?, finished = ? WHERE id = ?", (status, now(), session_id))

    @_guarded
    def sessions(self, host: str | None = None, since: str | None = None, until: str | None = None) -> list[SessionRow]:
        """The sessions, oldest first; only those of one host, or started within [since, until)
        (ISO dates or times, compared as the stored UTC times), when asked."""
        query, args = "SELECT id, token, started, finished, status, manifest FROM sessions", []
        bounds = [(">=", since), ("<", until)]
        where = [f"started {op} ?" for op, value in bounds if value]
        args += [value for _, value in bounds if value]
        if where:
            query += " WHERE " + " AND ".join(where)
        rows = [_session_row(row[:5], json.loads(row[5])) for row in self.db.execute(query + " ORDER BY id", args)]
        return [row for row in rows if host is None or row.host == host]

    @_guarded
    def sessions_with(self, key: str, value: str) -> list[SessionRow]:
        """The sessions whose manifest records key = value (e.g. the Slurm job a fleet's session ran
        in), oldest first."""
        return self._sessions_recording("manifest", key, value)

    @_guarded
    def sessions_asked(self, key: str, value: str) -> list[SessionRow]:
        """The sessions whose request (args) records key = value (e.g. the study and scale `fsbench
        study` ran them for: facts.study_marker), oldest first."""
        return self._sessions_recording("args", key, value)

    def _sessions_recording(self, column: str, key: str, value: str) -> list[SessionRow]:
        pattern = canonical({key: value})[1:-1].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.db.execute(f"SELECT id, token, started, finished, status, manifest, {column} FROM sessions"
                               f" WHERE {column} LIKE ? ESCAPE '\\' ORDER BY id", (f"%{pattern}%",))
        found = [(row, json.loads(row[5]), json.loads(row[6])) for row in rows]
        return [_session_row(row[:5], manifest) for row, manifest, recorded in found if recorded.get(key) == value]

    def hosts(self, session_ids: Iterable[int]) -> dict[int, str]:
        """The machine each session ran on (its manifest's hostname)."""
        return {i: manifest.get("hostname", "") for i, manifest in self.manifests(session_ids).items()}

    @_guarded
    def manifests(self, session_ids: Iterable[int]) -> dict[int, dict]:
        """Each session's own manifest (its host's facts: hostname, kernel, ...)."""
        ids = list(session_ids)
        if not ids:
            return {}
        rows = self.db.execute(f"SELECT id, manifest FROM sessions WHERE id IN ({', '.join('?' * len(ids))})", ids)
        return {int(i): json.loads(manifest) for i, manifest in rows}

    @_guarded
    def push(self, session_id: int, other: "Store") -> int:
        """Copy one session (its cases, runs, metrics, tests and targets' times) into another
        store, in one transaction there; its id in the other store. A session already there (by
        its token) is refused."""
        token = self.db.execute("SELECT token FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
        there = other.db.execute("SELECT id FROM sessions WHERE token = ?", (token,)).fetchone()
        if there is not None:
            raise UsageError(f"session {session_id} ({token}) is already in {other.path} as session {there[0]}")
        with other.db.transaction():
            return self._copy_into(session_id, other)

    def _copy_into(self, session_id: int, other: "Store") -> int:
        row = self.db.execute("SELECT token, started, finished, status, args, manifest FROM sessions WHERE id = ?",
                              (session_id,)).fetchone()
        new_session = other.db.execute("INSERT INTO sessions (token, started, finished, status, args, manifest)"
                                       " VALUES (?, ?, ?, ?, ?, ?) RETURNING id", row).fetchone()[0]
        case_columns = ("test, case_id, spec, workload, workload_params, cache, data, status, stopped_by, manifest,"
                        " summary")
        run_columns = ("idx, warmup, started, finished, seconds, cache_applied, prepare_seconds, cache_seconds,"
                       " wall_seconds, count_seconds")
        for case in self.db.execute(f"SELECT id, {case_columns} FROM cases WHERE session_id = ? ORDER BY id",
                                    (session_id,)).fetchall():
            new_case = other.db.execute(f"INSERT INTO cases (session_id, {case_columns}) VALUES (?{', ?' * 11})"
                                        " RETURNING id", (new_session, *case[1:])).fetchone()[0]
            for run in self.db.execute(f"SELECT id, {run_columns} FROM runs WHERE case_row = ? ORDER BY id",
                                       (case[0],)).fetchall():
                new_run = other.db.execute(f"INSERT INTO runs (case_row, {run_columns}) VALUES (?{', ?' * 10})"
                                           " RETURNING id", (new_case, *run[1:])).fetchone()[0]
                metrics = self.db.execute("SELECT name, params, value, unit, direction FROM metrics WHERE run_id = ?",
                                          (run[0],)).fetchall()
                other.db.executemany("INSERT INTO metrics (run_id, name, params, value, unit, direction)"
                                     " VALUES (?, ?, ?, ?, ?, ?)", [(new_run, *m) for m in metrics])
        other.db.executemany("INSERT INTO tests (session_id, test, outcome) VALUES (?, ?, ?)",
                             [(new_session, *t) for t in self.db.execute(
                                 "SELECT test, outcome FROM tests WHERE session_id = ?", (session_id,)).fetchall()])
        other.db.executemany("INSERT INTO targets (session_id, test, case_id, build_seconds, teardown_seconds)"
                             " VALUES (?, ?, ?, ?, ?)",
                             [(new_session, *t) for t in self.db.execute(
                                 "SELECT test, case_id, build_seconds, teardown_seconds FROM targets"
                                 " WHERE session_id = ?", (session_id,)).fetchall()])
        return int(new_session)

    @_guarded
    def resolve(self, ref: str, *, before: int | None = None) -> int:
        """A session by id, token, baseline name, 'last' (the newest complete one) or 'last@HOST'
        (the newest complete one of that machine)."""
        if ref.startswith("last@"):
            host = ref.split("@", 1)[1]
            done = [row.id for row in self.sessions(host=host) if row.status == "complete"
                    and (before is None or row.id < before)]
            if not done:
                raise UsageError(f"{ref!r}: no complete session of host {host!r} in {self.path}; fsbench sessions "
                                 "lists them with their hosts")
            return done[-1]
        if ref == "last":
            query = "SELECT id FROM sessions WHERE status = 'complete'"
            args: tuple = ()
            if before is not None:
                query += " AND id < ?"
                args = (before,)
            row = self.db.execute(query + " ORDER BY id DESC LIMIT 1", args).fetchone()
            if row is None:
                raise UsageError(f"'last': no complete session in {self.path} yet; finish a session first, or name "
                                 "one (fsbench sessions lists them)")
            return int(row[0])
        row = self.db.execute("SELECT session_id FROM baselines WHERE name = ?", (ref,)).fetchone()
        if row is None:
            row = self.db.execute("SELECT id FROM sessions WHERE token = ? OR CAST(id AS TEXT) = ?", (ref, ref)).fetchone()
        if row is None:
            names = [r[0] for r in self.db.execute("SELECT name FROM baselines ORDER BY name")]
            known = f"; baselines here: {', '.join(names)}" if names else "; this store has no baselines yet"
            raise UsageError(f"no baseline or session {ref!r} in {self.path}{known}")
        return int(row[0])

    @_guarded
    def last_unfinished(self, is_live: Callable[[str, dict], bool]) -> int:
        """The newest session that did not complete and whose process is gone (is_live(token,
        manifest) tells a session still running elsewhere, which must not be taken over)."""
        rows = self.db.execute("SELECT id, token, manifest FROM sessions WHERE status IN ('interrupted', 'running')"
                               " ORDER BY id DESC").fetchall()
        for session_id, token, manifest in rows:
            seen = json.loads(manifest)
            if not is_live(token, seen):
                return int(session_id)
            if "resumed_by" in seen:  # the last interrupted one, which another process resumes now (issue 44)
                raise UsageError(f"--resume: session {session_id}, the last interrupted one, is being resumed by "
                                 f"{runner(seen)}; only one process resumes a session (name another with "
                                 "--resume=ID: fsbench sessions lists them)")
        raise UsageError(f"--resume: no interrupted session in {self.path}")

    @_guarded
    def status(self, session_id: int) -> str:
        """The session's status: running, complete, interrupted, failed or empty."""
        return str(self.db.execute("SELECT status FROM sessions WHERE id = ?", (session_id,)).fetchone()[0])

    @_guarded
    def measured_runs(self, session_id: int) -> int:
        """How many measured (not warm-up) runs the session holds."""
        return int(self.db.execute("SELECT COUNT(*) FROM runs r JOIN cases c ON r.case_row = c.id"
                                   " WHERE c.session_id = ? AND r.warmup = 0", (session_id,)).fetchone()[0])

    @_guarded
    def case_runs(self, case_row: int) -> int:
        """How many measured runs one case holds (a resumed case keeps its earlier ones)."""
        return int(self.db.execute("SELECT COUNT(*) FROM runs WHERE case_row = ? AND warmup = 0",
                                   (case_row,)).fetchone()[0])

    @_guarded
    def unfinished_cases(self, session_id: int) -> list[str]:
        """Tests whose case is still running: not done, skipped or failed (interrupted cases)."""
        rows = self.db.execute("SELECT test FROM cases WHERE session_id = ? AND status = 'running'"
                               " ORDER BY id", (session_id,))
        return [row[0] for row in rows]

    @_guarded
    @_writing
    def save_baseline(self, name: str, session_id: int) -> None:
        """Add the session to baseline name (made if new); the name then also resolves to it."""
        with self.db.transaction():
            self.db.execute("INSERT INTO baselines (name, session_id, created) VALUES (?, ?, ?) ON CONFLICT(name) "
                            "DO UPDATE SET session_id = excluded.session_id, created = excluded.created",
                            (name, session_id, now()))
            self.db.execute("INSERT INTO baseline_sessions (name, session_id, added) VALUES (?, ?, ?)"
                            " ON CONFLICT DO NOTHING", (name, session_id, now()))

    @_guarded
    def baseline_sessions(self, ref: str, *, before: int | None = None) -> list[int]:
        """The sessions of baseline ref, oldest first; a session id, token or 'last' is one session."""
        rows = self.db.execute("SELECT session_id FROM baseline_sessions WHERE name = ? ORDER BY session_id",
                               (ref,)).fetchall()
        return [int(r[0]) for r in rows] if rows else [self.resolve(ref, before=before)]

    @_guarded
    def baselines(self) -> dict[str, list[int]]:
        """Every baseline name with its sessions, oldest first."""
        found: dict[str, list[int]] = {}
        for name, session_id in self.db.execute("SELECT name, session_id FROM baseline_sessions ORDER BY name, session_id"):
            found.setdefault(name, []).append(int(session_id))
        return found

    @_guarded
    @_writing
    def drop_baseline(self, name: str) -> int:
        """Forget baseline name (its sessions stay); how many sessions it held."""
        with self.db.transaction():
            held = self.db.execute("DELETE FROM baseline_sessions WHERE name = ?", (name,)).rowcount
            self.db.execute("DELETE FROM baselines WHERE name = ?", (name,))
        if not held:
            raise UsageError(f"no baseline {name!r} in {self.path}")
        return held

    @_guarded
    def baseline_names(self, session_id: int) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT name FROM baselines WHERE session_id = ? ORDER BY name",
                                                  (session_id,))]

    # --- cases and runs ----------------------------------------------------------------------------

    @_guarded
    @_writing
    def case_row(self, session_id: int, test: str, case_id: str, spec: dict[str, object], workload: str,
                 workload_params: dict[str, str], cache: str, data: str, manifest: dict[str, object]) -> int:
        """The row of this case in this session, created if new (a resumed case keeps its runs)."""
        params = canonical(workload_params)
        row = self.db.execute("SELECT id FROM cases WHERE session_id = ? AND test = ? AND workload = ? AND workload_params = ?",
                              (session_id, test, workload, params)).fetchone()
        if row is not None:
            return int(row[0])
        row = self.db.execute(
            "INSERT INTO cases (session_id, test, case_id, spec, workload, workload_params, cache, data, status, manifest)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?) RETURNING id",
            (session_id, test, case_id, canonical(spec), workload, params, cache, data, canonical(manifest))).fetchone()
        return int(row[0])

    @_guarded
    @_writing
    def add_run(self, case_row: int, warmup: bool, started: str, seconds: float, cache_applied: str,
                metrics: Iterable[Metric], prepare_seconds: float | None = None,
                cache_seconds: float | None = None, wall_seconds: float | None = None,
                count_seconds: float | None = None) -> None:
        """One run and its metrics, committed together. seconds: the measured command's; the
        unmeasured preparation's, the cache policy's, the counting of its work's and the whole
        run's in fsbench, where known."""
        with self.db.transaction():
            idx = self.db.execute("SELECT COUNT(*) FROM runs WHERE case_row = ?", (case_row,)).fetchone()[0]
            run_id = self.db.execute(
                "INSERT INTO runs (case_row, idx, warmup, started, finished, seconds, cache_applied, prepare_seconds,"
                " cache_seconds, wall_seconds, count_seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (case_row, idx, int(warmup), started, now(), seconds, cache_applied, prepare_seconds, cache_seconds,
                 wall_seconds, count_seconds)).fetchone()[0]
            self.db.executemany(
                "INSERT INTO metrics (run_id, name, params, value, unit, direction) VALUES (?, ?, ?, ?, ?, ?)",
                [(run_id, m.name, canonical(m.params), m.value, m.unit, m.direction.value) for m in metrics])
            self.db.execute("UPDATE cases SET summary = NULL WHERE id = ? AND summary IS NOT NULL", (case_row,))

    @_guarded
    @_writing
    def finish_case(self, case_row: int, status: str, stopped_by: str | None,
                    manifest: dict[str, object] | None = None) -> None:
        """The case's status and what stopped its runs; the target's manifest as it ended (what
        was learnt while measuring, e.g. the mount the files were on)."""
        self.db.execute("UPDATE cases SET status = ?, stopped_by = ? WHERE id = ?", (status, stopped_by, case_row))
        if manifest is not None:
            self.db.execute("UPDATE cases SET manifest = ? WHERE id = ?", (canonical(manifest), case_row))
        if status != "running":
            self.db.execute("UPDATE cases SET summary = ? WHERE id = ?", (self._summaries([case_row])[case_row],
                                                                         case_row))

    @_guarded
    @_writing
    def record_test(self, session_id: int, test: str, outcome: str) -> None:
        self.db.execute("INSERT INTO tests (session_id, test, outcome) VALUES (?, ?, ?) "
                        "ON CONFLICT(session_id, test) DO UPDATE SET outcome = excluded.outcome",
                        (session_id, test, outcome))

    @_guarded
    def test_outcomes(self, session_id: int) -> dict[str, str]:
        """Each test the session reported, with its outcome (passed, failed, skipped)."""
        rows = self.db.execute("SELECT test, outcome FROM tests WHERE session_id = ? ORDER BY test",
                               (session_id,))
        return {test: outcome for test, outcome in rows}

    @_guarded
    def finished_tests(self, session_id: int) -> set[str]:
        rows = self.db.execute("SELECT test FROM tests WHERE session_id = ? AND outcome IN ('passed', 'failed')", (session_id,))
        return {row[0] for row in rows}

    # --- bisects ---------------------------------------------------------------------------------

    @_guarded
    def start_bisect(self, host: str, tree: str, good: str, bad: str, record: dict[str, object]) -> int:
        row = self.db.execute("INSERT INTO bisects (started, status, host, tree, good, bad, record)"
                              " VALUES (?, 'running', ?, ?, ?, ?, ?) RETURNING id",
                              (now(), host, tree, good, bad, canonical(record))).fetchone()
        return int(row[0])

    @_guarded
    def save_bisect(self, bisect_id: int, status: str, record: dict[str, object]) -> None:
        """The bisect's record as it stands (after each step), and its status: running,
        interrupted, or finished (then its end time too)."""
        self.db.execute("UPDATE bisects SET status = ?, record = ?, finished = ? WHERE id = ?",
                        (status, canonical(record), now() if status == "finished" else None, bisect_id))

    @_guarded
    def bisect(self, bisect_id: int) -> BisectRow | None:
        row = self.db.execute("SELECT id, started, finished, status, host, tree, good, bad, record FROM bisects"
                              " WHERE id = ?", (bisect_id,)).fetchone()
        return None if row is None else BisectRow(*row[:8], json.loads(row[8]))

    @_guarded
    def bisects(self) -> list[BisectRow]:
        """Every bisect, oldest first."""
        rows = self.db.execute("SELECT id, started, finished, status, host, tree, good, bad, record FROM bisects"
                               " ORDER BY id").fetchall()
        return [BisectRow(*row[:8], json.loads(row[8])) for row in rows]

    # --- reading ---------------------------------------------------------------------------------

    @_guarded
    def series(self, session_id: int, *, test: str | None = None, case_row: int | None = None) -> list[Series]:
        """Measured (not warm-up) samples of every metric in a session, one Series per key."""
        query = ("SELECT c.test, c.workload, c.workload_params, m.name, m.params, c.case_id, m.unit, m.direction,"
                 " m.value, c.spec"
                 " FROM metrics m JOIN runs r ON m.run_id = r.id JOIN cases c ON r.case_row = c.id"
                 " WHERE c.session_id = ? AND r.warmup = 0")
        args: list[object] = [session_id]
        if test is not None:
            query += " AND c.test = ?"
            args.append(test)
        if case_row is not None:
            query += " AND c.id = ?"
            args.append(case_row)
        grouped: dict[SeriesKey, tuple[str, str, str, str, list[float]]] = {}
        for t, w, wp, name, params, case_id, unit, direction, value, spec in self.db.execute(query + " ORDER BY r.id", args):
            entry = grouped.setdefault(SeriesKey(t, w, wp, name, params), (case_id, unit, direction, spec, []))
            entry[4].append(value)
        return [Series(key, case_id, unit, Direction(direction), tuple(values), _options_text(spec),
                       _options_text(spec, "mounted"))
                for key, (case_id, unit, direction, spec, values) in grouped.items()]

    @_guarded
    def case_summaries(self, session_ids: Iterable[int]) -> dict[int, list[CaseSummary]]:
        """Each session's cases, each with its figures compared across sessions (the headline
        metrics and the work per byte moved) and what its manifest says of them: read from the
        cases' summaries, a row per case, for many sessions at once (a fleet's year of history,
        issue 43). A case finished before summaries were kept is summarised from its runs here,
        and its summary kept where the store can be written."""
        found: dict[int, list[CaseSummary]] = {}
        for batch in _batches(sorted(set(session_ids))):
            marks = ",".join("?" * len(batch))
            rows = self.db.execute(
                "SELECT id, session_id, test, case_id, spec, workload, workload_params, status, summary FROM cases"
                f" WHERE session_id IN ({marks}) ORDER BY id", batch).fetchall()
            missing = [row[0] for row in rows if row[8] is None]
            made = self._summaries(missing) if missing else {}
            if made and not self.db.read_only:
                self._keep_summaries({row[0]: made[row[0]] for row in rows if row[0] in made and row[7] != "running"})
            for row in rows:
                summary = json.loads(row[8] if row[8] is not None else made[row[0]])
                spec = json.loads(row[4])
                found.setdefault(row[1], []).append(CaseSummary(
                    row[1], row[0], row[2], row[3], row[5], row[6], row[7], _options_of(spec),
                    _options_of(spec, "mounted"), summary["manifest"], summary["series"]))
        return found

    def _summaries(self, case_rows: list[int]) -> dict[int, str]:
        """Each case's summary as case_summaries reads it, made from its runs and manifest."""
        found: dict[int, str] = {}
        for batch in _batches(case_rows):
            marks = ",".join("?" * len(batch))
            values: dict[int, list] = {row: [] for row in batch}
            for case_row, name, params, unit, direction, runs in sorted(self.db.grouped(
                    "r.case_row, m.name, m.params, m.unit, m.direction", "m.value", "r.id",
                    "metrics m JOIN runs r ON m.run_id = r.id"
                    f" WHERE r.case_row IN ({marks}) AND r.warmup = 0 AND {_compared_filter('m.name')}", batch),
                    key=lambda row: row[:3]):
                values[case_row].append([name, params, unit, direction, list(runs)])
            for case_row, manifest in self.db.execute(f"SELECT id, manifest FROM cases WHERE id IN ({marks})", batch):
                found[case_row] = summary_text(json.loads(manifest), values[case_row])
        return found

    def _keep_summaries(self, summaries: dict[int, str]) -> None:
        """Keep the summaries a reader made; a store this user may read but not write keeps none."""
        try:
            with self.db.transaction():
                self.db.executemany("UPDATE cases SET summary = ? WHERE id = ? AND summary IS NULL",
                                    [(text, row) for row, text in summaries.items()])
        except self.db.errors:
            pass

    @_guarded
    @_writing
    def add_target_times(self, session_id: int, test: str, case_id: str, build_seconds: float,
                         teardown_seconds: float) -> None:
        self.db.execute("INSERT INTO targets (session_id, test, case_id, build_seconds, teardown_seconds)"
                        " VALUES (?, ?, ?, ?, ?)", (session_id, test, case_id, build_seconds, teardown_seconds))

    @_guarded
    def time_totals(self, session_id: int) -> dict[str, float | None]:
        """Seconds of the session spent on each necessary step (None: not recorded): measured
        runs, warm-up runs, their preparation and cache policy, building and tearing down
        targets, counting the runs' work; fsbench's own work inside runs (monitoring, parsing,
        checks); and the session's wall time."""
        runs = self.db.execute(
            "SELECT SUM(CASE WHEN r.warmup = 0 THEN r.seconds ELSE 0 END), SUM(CASE WHEN r.warmup = 1 THEN r.seconds"
            " ELSE 0 END), SUM(r.prepare_seconds), SUM(r.cache_seconds), COUNT(r.id), COUNT(r.prepare_seconds),"
            " SUM(r.wall_seconds - r.seconds - r.prepare_seconds - r.cache_seconds - COALESCE(r.count_seconds, 0)),"
            " COUNT(r.wall_seconds), SUM(r.count_seconds), COUNT(r.count_seconds)"
            " FROM runs r JOIN cases c ON r.case_row = c.id WHERE c.session_id = ?", (session_id,)).fetchone()
        targets = self.db.execute("SELECT SUM(build_seconds), SUM(teardown_seconds), COUNT(*) FROM targets"
                                  " WHERE session_id = ?", (session_id,)).fetchone()
        started, finished = self.db.execute("SELECT started, finished FROM sessions WHERE id = ?",
                                            (session_id,)).fetchone()
        wall = None
        if finished:
            wall = (dt.datetime.fromisoformat(finished) - dt.datetime.fromisoformat(started)).total_seconds()
        recorded = runs[4] > 0 and runs[4] == runs[5]
        return {"session": wall, "measured": runs[0] or 0.0, "warm-up runs": runs[1] or 0.0,
                "preparing": runs[2] if recorded else None, "cache policy": runs[3] if recorded else None,
                "building targets": targets[0] if targets[2] else None,
                "tearing down targets": targets[1] if targets[2] else None,
                "counting the work": runs[8] if runs[4] > 0 and runs[4] == runs[9] else None,
                "fsbench in runs": runs[6] if runs[4] > 0 and runs[4] == runs[7] else None}

    @_guarded
    def test_times(self, session_id: int) -> list[Timing]:
        """Each test's time in the session: its runs (warm-up included), each whole in fsbench
        (its steps where that was not recorded), and its target's building and tearing down."""
        runs = self.db.execute(
            "SELECT c.test, MIN(c.spec), COUNT(r.id), SUM(COALESCE(r.wall_seconds, r.seconds"
            " + COALESCE(r.prepare_seconds, 0) + COALESCE(r.cache_seconds, 0)))"
            " FROM runs r JOIN cases c ON r.case_row = c.id WHERE c.session_id = ? GROUP BY c.test ORDER BY c.test",
            (session_id,)).fetchall()
        targets = dict(self.db.execute("SELECT test, SUM(build_seconds + teardown_seconds) FROM targets"
                                       " WHERE session_id = ? GROUP BY test", (session_id,)).fetchall())
        return [Timing(test, json.loads(spec).get("kernel", "host"), int(count), float(seconds),
                          None if targets.get(test) is None else float(targets[test]))
                for test, spec, count, seconds in runs]

    @_guarded
    def run_counts(self, session_id: int) -> dict[tuple[str, str, str], tuple[int, int]]:
        """(test, workload, workload_params) -> (warm-up runs discarded, measured runs) per case."""
        rows = self.db.execute("SELECT c.test, c.workload, c.workload_params, SUM(r.warmup), SUM(1 - r.warmup)"
                               " FROM runs r JOIN cases c ON r.case_row = c.id WHERE c.session_id = ?"
                               " GROUP BY c.id", (session_id,))
        return {(t, w, wp): (int(warm), int(measured)) for t, w, wp, warm, measured in rows}

    @_guarded
    def case_manifests(self, session_id: int) -> dict[str, dict[str, object]]:
        """Each case id's manifest (the last case of that id the session recorded)."""
        rows = self.db.execute("SELECT case_id, manifest FROM cases WHERE session_id = ? ORDER BY id", (session_id,))
        return {case_id: json.loads(manifest) for case_id, manifest in rows}

    @_guarded
    def sessions_ran(self, session_ids: Iterable[int]) -> dict[int, dict[str, object]]:
        """What each session ran (facts.ran): its recorded request, its host's kernel, and the
        cases (specs) and tests it measured."""
        ids = sorted(set(session_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(f"SELECT id, args, manifest FROM sessions WHERE id IN ({marks})", ids).fetchall()
        specs: dict[int, list[dict]] = {}
        parsed: dict[str, dict] = {}  # a fleet's sessions share a few specs: each read once (issue 43)
        for session_id, spec in self.db.execute(f"SELECT DISTINCT session_id, spec FROM cases WHERE session_id IN "
                                                f"({marks})", ids):
            if spec not in parsed:
                parsed[spec] = json.loads(spec)
            specs.setdefault(session_id, []).append(parsed[spec])
        tests = dict(self.db.execute(f"SELECT session_id, COUNT(*) FROM tests WHERE session_id IN ({marks}) "
                                     "GROUP BY session_id", ids).fetchall())
        return {row[0]: ran(json.loads(row[1]), json.loads(row[2]), specs.get(row[0], []), tests.get(row[0], 0))
                for row in rows}

    @_guarded
    def session_export(self, session_id: int) -> dict[str, object]:
        row = self.db.execute("SELECT token, started, finished, status, args, manifest FROM sessions WHERE id = ?",
                              (session_id,)).fetchone()
        cases = self.db.execute("SELECT id, test, case_id, spec, workload, workload_params, cache, data, status,"
                                " stopped_by, manifest FROM cases WHERE session_id = ? ORDER BY id", (session_id,)).fetchall()
        return {"session": {"id": session_id, "token": row[0], "started": row[1], "finished": row[2], "status": row[3],
                            "args": json.loads(row[4]), "manifest": json.loads(row[5])},
                "cases": [{"row": c[0], "test": c[1], "case_id": c[2], "spec": json.loads(c[3]), "workload": c[4],
                           "workload_params": json.loads(c[5]), "cache": c[6], "data": c[7], "status": c[8],
                           "stopped_by": c[9], "manifest": json.loads(c[10])} for c in cases]}


def summary_text(manifest: dict, series: list[list]) -> str:
    """A case's summary as the store keeps it: SUMMARY_MANIFEST's part of its manifest, and its
    series as [metric, params, unit, direction, [the measured runs' values]], by metric and params."""
    kept = {key: value for key, value in manifest.items() if key in SUMMARY_MANIFEST}
    return canonical({"manifest": kept, "series": sorted(series, key=lambda entry: entry[:2])})


def _session_row(row: Sequence, manifest: dict) -> SessionRow:
    """A session's row (id, token, started, finished, status) with its manifest."""
    return SessionRow(*row, manifest.get("hostname", ""), manifest)


#: the most sessions one query names (SQLite takes at most 32,766 parameters)
BATCH = 500


def _batches(ids: list[int], size: int = BATCH) -> Iterable[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start:start + size]


#: a stored direction's Direction (Direction(text) costs a second in a host's year of summaries)
DIRECTIONS = {direction.value: direction for direction in Direction}


def _options_text(spec_json: str, key: str = "options") -> str:
    """The case's options as asked ("options", what makes it the same case across sessions), or as
    the kernel applied them ("mounted", where that was read; else as asked)."""
    return _options_of(json.loads(spec_json), key)


def _options_of(spec: dict, key: str = "options") -> str:
    options = spec.get(key) or spec.get("options", {})
    return ",".join(f"{k}={v}" for k, v in options.items()) or "none"


def migrate(database) -> None:
    """Bring the schema to the newest version, one migration at a time."""
    with database.migrating():
        version = database.version()
        if version > len(MIGRATIONS):
            raise UsageError(f"the result store is schema version {version}, newer than this fsbench "
                             f"({len(MIGRATIONS)}); upgrade fsbench or use another {database.option}")
        if version < len(MIGRATIONS) and database.read_only:
            raise UsageError(f"the result store {database.name} is schema version {version}, older than this "
                             f"fsbench's ({len(MIGRATIONS)}), and cannot be written here to upgrade it; open it "
                             "once where it can be written")
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            database.migrate_step(number, script.format(**TYPES[database.dialect]))
