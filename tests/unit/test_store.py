import sqlite3

import pytest

from pytest_fsbench.errors import UsageError
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store import MIGRATIONS, Store


def write(value: float) -> list[Metric]:
    return [Metric("dd.write", value, "MB/s", Direction.HIGHER, {"bs": "1M"}),
            Metric("cpu.user", 10.0, "%", Direction.LOWER)]


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "fsbench.db")
    yield s
    s.close()


def case(store, session, test="t[ext4-single]"):
    return store.case_row(session, test, "ext4-single", {"fs": "ext4"}, "dd", {"bs": "1M"}, "drop", "random", {})


def test_runs_are_committed_one_by_one(store, tmp_path):
    session = store.start_session("tok", {"argv": []}, {"kernel": "x"})
    row = case(store, session)
    store.add_run(row, True, "t0", 1.0, "drop", write(1.0))
    store.add_run(row, False, "t1", 1.0, "drop", write(100.0))
    # a second connection (another process) sees the run at once: nothing waits for a commit
    other = sqlite3.connect(tmp_path / "fsbench.db")
    assert other.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    other.close()
    [cpu, dd] = sorted(store.series(session), key=lambda s: s.key.metric)
    assert dd.values == (100.0,) and dd.unit == "MB/s" and dd.direction is Direction.HIGHER  # warm-up left out
    assert store.completed_runs(row) == 1


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
    store.save_baseline("base", second)  # a name can be saved again: it moves
    assert store.resolve("base") == second
    with pytest.raises(UsageError, match="no baseline or session 'nope' .*; baselines here: base"):
        store.resolve("nope")


def test_last_needs_a_complete_session(store):
    store.start_session("a", {}, {})
    with pytest.raises(UsageError, match="no complete session"):
        store.resolve("last")
    assert store.last_unfinished() == 1


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
