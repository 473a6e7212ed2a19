"""The result store, on SQLite and on a real PostgreSQL server (the same tests, where a server can
be started here), plus what only one of them has."""

import sqlite3
import subprocess

import pytest

from pytest_fsbench.store.databases import TYPES
from pytest_fsbench.errors import UsageError
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import MIGRATIONS, Store, StoreError, Timing

SQLITE_SCHEMA = [script.format(**TYPES["sqlite"]) for script in MIGRATIONS]


def write(value: float) -> list[Metric]:
    return [Metric("dd.write", value, "MB/s", Direction.HIGHER, {"bs": "1M"}),
            Metric("cpu.user", 10.0, "%", Direction.LOWER)]


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    """Where a new, empty store is: an SQLite file, or a fresh database on the test server."""
    if request.param == "sqlite":
        return tmp_path / "fsbench.db"
    return request.getfixturevalue("postgres_server").new_database()


@pytest.fixture
def store(location):
    s = Store(location)
    yield s
    s.close()


def case(store, session, test="t[ext4-single]"):
    return store.case_row(session, test, "ext4-single", {"fs": "ext4"}, "dd", {"bs": "1M"}, "drop", "random", {})


def test_runs_are_committed_one_by_one(store, location):
    session = store.start_session("tok", {"argv": []}, {"kernel": "x"})
    row = case(store, session)
    store.add_run(row, True, "t0", 1.0, "drop", write(1.0))
    store.add_run(row, False, "t1", 1.0, "drop", write(100.0))
    # a second connection (another process) sees the run at once: nothing waits for a commit
    other = Store(location, create=False)
    assert other.measured_runs(session) == 1 and other.run_counts(session) == {
        ("t[ext4-single]", "dd", '{"bs":"1M"}'): (1, 1)}
    other.close()
    [cpu, dd] = sorted(store.series(session), key=lambda s: s.key.metric)
    assert dd.values == (100.0,) and dd.unit == "MB/s" and dd.direction is Direction.HIGHER  # warm-up left out
    assert store.measured_runs(session) == 1


def test_a_resumed_case_keeps_its_row(store):
    session = store.start_session("tok", {}, {})
    assert case(store, session) == case(store, session)
    assert case(store, session, "t[btrfs-single]") != case(store, session)


def test_baselines_and_references(store):
    first = store.start_session("a", {}, {})
    store.finish_session(first, "complete")
    second = store.start_session("b", {}, {})
    store.save_baseline("base", first)
    assert store.resolve("base") == first
    assert store.resolve("b") == second and store.resolve(str(first)) == first
    assert store.resolve("last", before=second) == first
    store.save_baseline("base", second)  # a name saved again adds the session; the name resolves to it
    assert store.resolve("base") == second
    assert store.baseline_sessions("base") == [first, second]
    store.save_baseline("base", second)  # once each
    assert store.baseline_sessions("base") == [first, second]
    assert store.baseline_sessions(str(first)) == [first]  # a session is a baseline of one
    assert store.baselines() == {"base": [first, second]}
    assert store.drop_baseline("base") == 2
    with pytest.raises(UsageError, match="no baseline 'base'"):
        store.drop_baseline("base")
    store.save_baseline("base", first)
    with pytest.raises(UsageError, match="no baseline or session 'nope' .*; baselines here: base"):
        store.resolve("nope")


def test_last_needs_a_complete_session(store):
    store.start_session("a", {}, {})
    with pytest.raises(UsageError, match="'last': no complete session"):
        store.resolve("last")
    assert store.last_unfinished(lambda token, manifest: False) == 1


def test_resume_never_takes_a_live_session(store):
    dead = store.start_session("dead", {}, {})
    store.start_session("live", {}, {})
    assert store.last_unfinished(lambda token, manifest: token == "live") == dead
    with pytest.raises(UsageError, match="no interrupted session"):
        store.last_unfinished(lambda token, manifest: True)


def test_of_two_stores_reopening_one_session_as_they_saw_it_only_one_takes_it(store, tmp_path):
    session = store.start_session("a", {}, {"process": "1 0.00", "hostname": "h"})
    store.finish_session(session, "interrupted")
    other = Store(store.path)
    try:
        seen = [s.session_export(session)["session"] for s in (store, other)]  # both read it before either writes
        assert store.reopen_session(session, seen[0], {"process": "2 5.00", "hostname": "h"}) is None
        taker = other.reopen_session(session, seen[1], {"process": "3 6.00", "hostname": "h"})
    finally:
        other.close()
    assert taker == {"process": "1 0.00", "hostname": "h", "resumed_by": {"process": "2 5.00", "hostname": "h"}}
    assert store.status(session) == "running"


def test_resume_refuses_the_last_session_while_another_process_resumes_it(store):
    older = store.start_session("older", {}, {})
    newer = store.start_session("newer", {}, {})
    store.finish_session(older, "interrupted")
    seen = store.session_export(newer)["session"]
    store.reopen_session(newer, seen, {"process": "7 1.00", "hostname": "h", "at": "2026-01-01T00:00:00+00:00"})
    with pytest.raises(UsageError, match="session 2, the last interrupted one, is being resumed by pid 7 on h"):
        store.last_unfinished(lambda token, manifest: "resumed_by" in manifest)


def test_unfinished_cases_and_measured_runs(store):
    session = store.start_session("a", {}, {})
    row = case(store, session)
    assert store.unfinished_cases(session) == ["t[ext4-single]"] and store.measured_runs(session) == 0
    store.add_run(row, True, "t0", 1.0, "drop", write(1.0))
    assert store.measured_runs(session) == 0  # a warm-up is not a measured run
    store.add_run(row, False, "t1", 1.0, "drop", write(2.0))
    store.finish_case(row, "failed", None)
    assert store.unfinished_cases(session) == [] and store.measured_runs(session) == 1


@pytest.mark.parametrize("content, message", [
    (b"", "is an empty file, not an fsbench store"),
    (b"not a database at all, just text\n" * 10, "is not an SQLite database"),
])
def test_reading_refuses_what_is_not_a_store_and_writes_nothing(tmp_path, content, message):
    path = tmp_path / "x.db"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message):
        Store(path, create=False)
    assert path.read_bytes() == content


def test_reading_refuses_a_missing_store_and_another_programs_database(tmp_path):
    with pytest.raises(UsageError, match="no result store at"):
        Store(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE recipes (name TEXT)")
    db.close()
    for create in (True, False):
        with pytest.raises(UsageError, match="SQLite database of something else .*recipes"):
            Store(other, create=create)


def test_writing_refuses_a_directory_or_a_file_as_parent(tmp_path):
    with pytest.raises(UsageError, match="is a directory; name the store's file"):
        Store(tmp_path)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match="afile is a file, not a directory"):
        Store(tmp_path / "afile" / "fsbench.db")


def test_a_failing_store_raises_store_error(store):
    store.db.execute("DROP TABLE metrics")  # a fault the database reports, caused here by hand
    store.db.execute("DROP TABLE runs")
    with pytest.raises(StoreError, match=f"result store {store.path}: .*runs"):
        store.measured_runs(1)


def test_finished_tests(store):
    session = store.start_session("a", {}, {})
    store.record_test(session, "t1", "passed")
    store.record_test(session, "t2", "skipped")
    store.record_test(session, "t3", "failed")
    assert store.finished_tests(session) == {"t1", "t3"}


def test_schema_version_and_newer_store(tmp_path):
    path = tmp_path / "x.db"
    Store(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    db.close()
    with pytest.raises(UsageError, match="newer than this fsbench"):
        Store(path)


def test_export(store):
    session = store.start_session("a", {"argv": ["--fs=ext4"]}, {"kernel": "6.1"})
    case(store, session)
    exported = store.session_export(session)
    assert exported["session"]["manifest"] == {"kernel": "6.1"}
    assert exported["cases"][0]["workload_params"] == {"bs": "1M"}


def test_version_1_store_keeps_its_baseline(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(f"BEGIN; {SQLITE_SCHEMA[0]}; PRAGMA user_version = 1; COMMIT;")
    db.execute("INSERT INTO sessions (id, token, started, status, args, manifest) VALUES (7, 't', 'x', 'complete', '{}', '{}')")
    db.execute("INSERT INTO baselines (name, session_id, created) VALUES ('base', 7, 'x')")
    db.commit()
    db.close()
    store = Store(path, create=False)
    assert store.baseline_sessions("base") == [7]
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    store.close()


def test_where_the_time_went_and_an_older_session_without_it(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(f"BEGIN; {SQLITE_SCHEMA[0]}; {SQLITE_SCHEMA[1]}; PRAGMA user_version = 2; COMMIT;")
    db.execute("INSERT INTO sessions (id, token, started, finished, status, args, manifest) VALUES "
               "(1, 'old', '2026-11-23T10:00:00+00:00', '2026-11-23T10:01:40+00:00', 'complete', '{}', '{}')")
    db.execute("INSERT INTO cases (id, session_id, test, case_id, spec, workload, workload_params, cache, data, status,"
               " manifest) VALUES (1, 1, 't', 'ext4-single', '{}', 'dd', '{}', 'drop', 'random', 'done', '{}')")
    db.execute("INSERT INTO runs (case_row, idx, warmup, started, finished, seconds, cache_applied) VALUES "
               "(1, 0, 0, 'a', 'b', 30.0, 'drop')")
    db.commit()
    db.close()
    store = Store(path)
    old = store.time_totals(1)
    assert old["session"] == 100.0 and old["measured"] == 30.0 and old["preparing"] is None
    assert old["building targets"] is None
    new = store.start_session("new", {"argv": []}, {})
    row = store.case_row(new, "t", "ext4-single", {}, "dd", {}, "drop", "random", {})
    store.add_run(row, True, "a", 5.0, "drop", [], prepare_seconds=1.0, cache_seconds=0.5, wall_seconds=6.75)
    store.add_run(row, False, "a", 10.0, "drop", [], prepare_seconds=2.0, cache_seconds=0.5, wall_seconds=12.75,
                  count_seconds=0.25)
    store.add_target_times(new, "t", "ext4-single", 3.0, 1.5)
    store.finish_session(new, "complete")
    totals = store.time_totals(new)
    assert {k: v for k, v in totals.items() if k != "session"} == {
        "measured": 10.0, "warm-up runs": 5.0, "preparing": 3.0, "cache policy": 1.0, "building targets": 3.0,
        "tearing down targets": 1.5, "counting the work": None, "fsbench in runs": 0.25}
    assert old["fsbench in runs"] is None and old["counting the work"] is None
    # each test's time, for a study's plan: its runs whole (their steps where that was not recorded), its target
    assert store.test_times(new) == [Timing("t", "host", 2, 6.75 + 12.75, 4.5)]
    assert store.test_times(1) == [Timing("t", "host", 1, 30.0, None)]
    store.close()


def test_the_sessions_a_study_ran_are_found_by_what_they_asked(store):
    """`fsbench study` records the study and scale in the session's request (facts.study_marker);
    a plan of that study finds them there, and a guest's case is timed as the guest's."""
    a = store.start_session("a", {"argv": [], "study": "btrfs-options --scale=quick"}, {"hostname": "h"})
    store.start_session("b", {"argv": [], "study": "btrfs-options --scale=paper"}, {"hostname": "h"})
    store.start_session("c", {"argv": ["btrfs-options --scale=quick"]}, {"study": "btrfs-options --scale=quick"})
    d = store.start_session("d", {"study": "btrfs-options --scale=quick"}, {})
    assert [row.id for row in store.sessions_asked("study", "btrfs-options --scale=quick")] == [a, d]
    assert store.sessions_asked("study", "btrfs_options --scale=quick") == []  # _ is no wildcard
    row = store.case_row(d, "p.py::t[vm-zfs-single]", "vm-zfs-single", {"fs": "zfs", "kernel": "vm"}, "dd", {},
                         "drop", "random", {})
    store.add_run(row, False, "a", 10.0, "drop", [], wall_seconds=12.0)
    assert store.test_times(d) == [Timing("p.py::t[vm-zfs-single]", "vm", 1, 12.0, None)]


def test_sessions_by_host_and_time(store):
    a = store.start_session("a", {}, {"hostname": "alpha"})
    b = store.start_session("b", {}, {"hostname": "beta"})
    assert [(r.id, r.host) for r in store.sessions()] == [(a, "alpha"), (b, "beta")]
    assert [r.id for r in store.sessions(host="beta")] == [b]
    assert store.sessions(host="gamma") == []
    assert [r.id for r in store.sessions(since="2000-01-01")] == [a, b]
    assert store.sessions(until="2000-01-01") == [] and store.sessions(since="2999-01-01") == []
    assert store.hosts([a, b]) == {a: "alpha", b: "beta"}


def test_push_copies_a_session_whole_and_once(tmp_path, location):
    local = Store(tmp_path / "local.db")
    session = local.start_session("tok-1", {"argv": ["--fs=ext4"]}, {"hostname": "offline-box"})
    row = case(local, session)
    local.add_run(row, True, "t0", 1.0, "drop", write(1.0), 0.5, 0.25, 2.0)
    for value in (100.0, 110.0):
        local.add_run(row, False, "t1", 1.0, "drop", write(value), 0.5, 0.25, 2.0)
    local.finish_case(row, "done", "runs")
    local.record_test(session, "t[ext4-single]", "passed")
    local.add_target_times(session, "t[ext4-single]", "ext4-single", 3.0, 1.0)
    local.finish_session(session, "complete")
    shared = Store(location)
    shared.start_session("someone-else", {}, {"hostname": "rack-1"})  # ids differ between the stores
    pushed = local.push(session, shared)
    assert pushed == session + 1
    assert shared.series(pushed) == local.series(session)
    assert shared.run_counts(pushed) == local.run_counts(session)
    assert shared.finished_tests(pushed) == {"t[ext4-single]"}
    assert shared.time_totals(pushed) == local.time_totals(session)
    assert shared.session_export(pushed)["session"]["manifest"] == {"hostname": "offline-box"}
    assert shared.resolve("tok-1") == pushed
    with pytest.raises(UsageError, match=f"session {session} \\(tok-1\\) is already in .* as session {pushed}"):
        local.push(session, shared)
    local.close()
    shared.close()


def test_time_bounds_are_read_as_the_store_keeps_its_times():
    import argparse

    from pytest_fsbench.cli import utc_time

    assert utc_time("2026-11-01") == "2026-11-01T00:00:00+00:00"
    assert utc_time("2026-11-01T12:00+02:00") == "2026-11-01T10:00:00+00:00"
    with pytest.raises(argparse.ArgumentTypeError, match="'yesterday' is not a date or time"):
        utc_time("yesterday")


def test_a_series_shows_the_options_as_mounted_when_they_were_read(store):
    """Issue 34: compress=zstd ran as zstd:3; what is stored and shown is what ran."""
    session = store.start_session("tok-1", {}, {})
    asked = {"fs": "btrfs", "options": {"compress": "zstd"}}
    rows = [store.case_row(session, "t[a]", "btrfs-single", asked, "dd", {}, "drop", "random", {}),
            store.case_row(session, "t[b]", "btrfs-single", {**asked, "mounted": {"compress": "zstd:3"}}, "dd",
                           {}, "drop", "random", {})]
    for row in rows:
        store.add_run(row, False, "t", 1.0, "drop", write(100.0))
    assert sorted({s.mounted for s in store.series(session)}) == ["compress=zstd", "compress=zstd:3"]
    # as asked, both are one configuration (a baseline stored before mounts were read is not "changed")
    assert {s.options for s in store.series(session)} == {"compress=zstd"}


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_store_file_removed_or_replaced_under_a_session_is_kept_elsewhere_at_the_next_write(tmp_path, how):
    path = tmp_path / "fsbench.db"
    store = Store(path)
    try:
        session = store.start_session("tok", {}, {})
        row = case(store, session)
        store.add_run(row, False, "t0", 1.0, "drop", write(1.0))
        path.unlink()
        if how == "replaced":
            path.write_bytes(b"")
        with pytest.raises(StoreError, match=f"its file was {how}.* during the session; everything it held, this "
                                             "session's runs too, is kept in .*fsbench.rescued-") as caught:
            store.add_run(row, False, "t1", 1.0, "drop", write(2.0))
        rescued = tmp_path / caught.value.remedy.split()[0].removeprefix("--store=")
        assert store.path == str(rescued)
        store.finish_session(session, "interrupted")  # written there from now on
    finally:
        store.close()
    with sqlite3.connect(rescued) as con:
        assert con.execute("SELECT COUNT(*) FROM runs").fetchone() == (2,)  # the write that noticed it too
        assert con.execute("SELECT status FROM sessions").fetchone() == ("interrupted",)
    assert path.exists() == (how == "replaced") and (not path.exists() or path.stat().st_size == 0)


def summed(store, session):
    return {(c.test, tuple(f[0] for f in c.figures)): c for c in store.case_summaries([session])[session]}


def test_a_finished_case_keeps_its_summary_and_a_new_run_drops_it(store):
    """Issue 43: a case's figures compared across sessions (headline, work per byte) and what its
    manifest says of them, kept when it finishes; a run added later (a resumed case) drops it."""
    session = store.start_session("tok", {}, {"hostname": "h"})
    row = case(store, session)
    for value in (100.0, 120.0, 110.0):
        store.add_run(row, False, "t", 1.0, "drop", [*write(value), Metric("work.write_amp", 1.01, "x", Direction.LOWER),
                                                     Metric("work.flushes", 3.0, "req", Direction.LOWER)])
    store.finish_case(row, "done", "runs", {"applied": {"mount": "/dev/loop1 ext4 rw"}, "devices": ["big"],
                                            "gate": [{"line": "x regression: ...", "failed": True}]})
    kept = store.db.execute("SELECT summary FROM cases WHERE id = ?", (row,)).fetchone()[0]
    [summary] = store.case_summaries([session])[session]
    assert [f[0] for f in summary.figures] == ["dd.write", "work.write_amp"]  # cpu.user, work.flushes: not compared
    assert summary.figures[0][4] == [100.0, 120.0, 110.0]
    assert summary.manifest == {"applied": {"mount": "/dev/loop1 ext4 rw"},
                                "gate": [{"line": "x regression: ...", "failed": True}]}
    assert [s.values for s in summary.series] == [(100.0, 120.0, 110.0), (1.01, 1.01, 1.01)]
    assert summary.series[0] == next(s for s in store.series(session) if s.key.metric == "dd.write")
    assert kept is not None
    store.add_run(row, False, "t", 1.0, "drop", write(90.0))
    assert store.db.execute("SELECT summary FROM cases WHERE id = ?", (row,)).fetchone()[0] is None
    assert store.case_summaries([session])[session][0].figures[0][4] == [100.0, 120.0, 110.0, 90.0]


def test_a_case_finished_before_summaries_is_summed_up_by_its_first_reader(store):
    """A store recorded before schema 8: its cases have no summary; the first reader makes them
    from the runs, the same as a finishing case would, and keeps those of finished cases."""
    session = store.start_session("tok", {}, {"hostname": "h"})
    done, running = case(store, session), case(store, session, "t[btrfs-single]")
    for row in (done, running):
        store.add_run(row, False, "t", 1.0, "drop", write(50.0))
    store.finish_case(done, "done", "runs", {})
    made = store.db.execute("SELECT summary FROM cases WHERE id = ?", (done,)).fetchone()[0]
    store.db.execute("UPDATE cases SET summary = NULL")
    found = store.case_summaries([session])[session]
    assert [(c.test, c.status, c.figures[0][4]) for c in found] == [("t[ext4-single]", "done", [50.0]),
                                                                      ("t[btrfs-single]", "running", [50.0])]
    kept = dict(store.db.execute("SELECT id, summary FROM cases"))
    assert kept == {done: made, running: None}  # a running case's summary is not kept: its runs go on


@pytest.mark.root
def test_a_store_on_a_read_only_mount_is_summed_up_without_writing(tmp_path):
    """Its cases summed up from their runs each time, nothing written (a bind mount made read-only)."""
    store = Store(tmp_path / "fsbench.db")
    session = store.start_session("tok", {}, {"hostname": "h"})
    row = case(store, session)
    store.add_run(row, False, "t", 1.0, "drop", write(50.0))
    store.finish_case(row, "done", "runs", {})
    store.db.execute("UPDATE cases SET summary = NULL")
    store.close()
    mounted = tmp_path / "read-only"
    mounted.mkdir()
    subprocess.run(["mount", "--bind", str(tmp_path), str(mounted)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mounted)], check=True)
        reader = Store(mounted / "fsbench.db", create=False)
        assert reader.db.read_only
        assert reader.case_summaries([session])[session][0].figures[0][4] == [50.0]
        reader.close()
    finally:
        subprocess.run(["umount", str(mounted)], check=True)
    assert sqlite3.connect(tmp_path / "fsbench.db").execute("SELECT summary FROM cases").fetchone() == (None,)


def test_push_copies_the_summaries(tmp_path, location):
    source = Store(tmp_path / "source.db")
    session = source.start_session("tok-s", {}, {"hostname": "h"})
    row = case(source, session)
    source.add_run(row, False, "t", 1.0, "drop", write(70.0))
    source.finish_case(row, "done", "runs", {})
    target = Store(location)
    pushed = source.push(session, target)
    assert [c.figures for c in target.case_summaries([pushed])[pushed]] == \
        [c.figures for c in source.case_summaries([session])[session]]
    assert target.db.execute("SELECT COUNT(summary) FROM cases").fetchone()[0] == 1
    source.close()
    target.close()


def test_sql_with_a_percent_sign_runs_on_both_databases(store):
    """The store's SQL names LIKE patterns ('cpu.%') as they are; psycopg reads % as its own."""
    assert store.db.execute("SELECT 'cpu.%' LIKE ?", ("cpu.%",)).fetchone()[0] in (1, True)
    assert store.db.execute("SELECT 'a%b'").fetchone()[0] == "a%b"
