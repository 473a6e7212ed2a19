"""How fast the result store answers when it is large: a generated store of 100,000 runs (many
sessions of many cases, as a fleet gathers over months), then `fsbench sessions`, `fsbench
compare` and `fsbench report` against it, each timed as a user runs it (the whole command) and
as the store's own part (its queries). Not a pytest test.

    .venv/bin/python scripts/store_scale.py                                  # SQLite
    .venv/bin/python scripts/store_scale.py --store postgresql://fsbench@db/fsbench_scale

The PostgreSQL database must be empty (the script fills it); its password comes as for fsbench
(PGPASSFILE, ~/.pgpass, PGPASSWORD). The exit status is 1 when a store's part takes --limit
seconds or more.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_fsbench.verdicts.baseline import compare_pairs  # noqa: E402
from pytest_fsbench.store.databases import is_url  # noqa: E402
from pytest_fsbench.store.results import Store, canonical, now  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CASES = [(f"test_dd_{op}[{fs}-{layout}-1M]", f"{fs}-{layout}") for op in ("write", "read")
         for fs in ("ext4", "xfs", "btrfs", "zfs", "ext2") for layout in ("single", "raid1")]


def fill(store: Store, sessions: int, runs: int, hosts: int) -> None:
    """sessions x len(CASES) cases x runs measured runs, two metrics each, in one transaction per
    session; seeded, so every store of the same size holds the same numbers."""
    rng = random.Random(1)
    for number in range(sessions):
        host = f"rack-{number % hosts}"
        with store.db.transaction():
            session = store.db.execute(
                "INSERT INTO sessions (token, started, finished, status, args, manifest) VALUES (?, ?, ?, 'complete',"
                " ?, ?) RETURNING id", (f"scale-{number}", f"2026-{1 + number * 12 // sessions:02d}-01T00:00:00+00:00",
                                        now(), canonical({"argv": []}), canonical({"hostname": host}))).fetchone()[0]
            for test, case_id in CASES:
                row = store.db.execute(
                    "INSERT INTO cases (session_id, test, case_id, spec, workload, workload_params, cache, data, status,"
                    " stopped_by, manifest) VALUES (?, ?, ?, ?, 'dd', ?, 'drop', 'random', 'done', 'runs', '{}')"
                    " RETURNING id", (session, test, case_id, json.dumps({"fs": case_id.split("-")[0]}),
                                      canonical({"bs": "1M", "size": "256M"}))).fetchone()[0]
                metric = "dd.write" if "write" in test else "dd.read"
                for idx in range(runs):
                    run = store.db.execute(
                        "INSERT INTO runs (case_row, idx, warmup, started, finished, seconds, cache_applied)"
                        " VALUES (?, ?, 0, 'x', 'x', 1.0, 'drop') RETURNING id", (row, idx)).fetchone()[0]
                    store.db.executemany(
                        "INSERT INTO metrics (run_id, name, params, value, unit, direction) VALUES (?, ?, ?, ?, ?, ?)",
                        [(run, metric, "{}", rng.gauss(300, 30), "MB/s", "higher"),
                         (run, "cpu.user", "{}", rng.gauss(10, 1), "%", "lower")])


def timed(what: str, action) -> float:
    start = time.monotonic()
    action()
    seconds = time.monotonic() - start
    print(f"  {what:34} {seconds:6.2f} s")
    return seconds


def command(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", *args], cwd=REPO, capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"store_scale: fsbench {' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="an empty PostgreSQL database's URL (default: a new SQLite file)")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--runs", type=int, default=100, help="measured runs per case (20 cases a session)")
    parser.add_argument("--limit", type=float, default=2.0, help="seconds a store's part may take (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fsbench-scale-") as tmp:
        location = args.store if args.store and is_url(args.store) else str(Path(tmp) / "scale.db")
        store = Store(location)
        if store.sessions():
            sys.exit(f"store_scale: {store.path} is not empty; give an empty database")
        start = time.monotonic()
        fill(store, args.sessions, args.runs, hosts=4)
        total = store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        print(f"{store.path}: {total} runs in {args.sessions} sessions, made in {time.monotonic() - start:.0f} s")
        newest, older = args.sessions, args.sessions - 4  # the same host, four sessions apart
        print("the store's part (its queries):")
        parts = [timed("sessions --host rack-1", lambda: store.sessions(host="rack-1")),
                 timed(f"compare {older} {newest}", lambda: compare_pairs(store, [older], newest, 0.05)),
                 timed(f"report {newest} (its data)", lambda: _report_data(store, newest, older))]
        print("the whole command, as a user runs it (Python's start-up and imports included):")
        timed("fsbench sessions --host rack-1", lambda: command("sessions", f"--store={location}", "--host=rack-1"))
        timed(f"fsbench compare {older} {newest}", lambda: command("compare", str(older), str(newest),
                                                                   f"--store={location}"))
        timed(f"fsbench report {newest}", lambda: command("report", str(newest), f"--compare={older}",
                                                          f"--store={location}", f"-o={Path(tmp) / 'r.html'}"))
        store.close()
    return 1 if max(parts) >= args.limit else 0


def _report_data(store: Store, session: int, base: int) -> None:
    from pytest_fsbench.views import report

    report.report_data(store, session, [base])


if __name__ == "__main__":
    sys.exit(main())
