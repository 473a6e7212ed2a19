"""fsbench's own overhead in a dd matrix session: the share of the session that is neither a
measured command nor a step the measurement needs (preparing data, the cache policy, building
and tearing down targets). Not a pytest test.

    .venv/bin/python scripts/overhead.py                      # ./fsbench.sh bench's dd matrix
    .venv/bin/python scripts/overhead.py --limit 3 -- --fs=ext4,btrfs --layout=single

Runs `pytest benchmarks/test_dd.py` with the given pytest arguments into a store of its own, then
prints where the session's time went, from the store: each step's seconds and share, "fsbench in
runs" (monitoring, parsing, checks inside each run), "the rest" (pytest, Python, store commits,
decisions between runs) and, outside the session's own clock, the process's start-up and
collection. fsbench's overhead is "fsbench in runs" plus "the rest"; the exit status is 1 when
it is --limit percent of the session or more.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_fsbench.store.results import Store  # noqa: E402
from pytest_fsbench.views.tables import time_shares  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MATRIX = ["--fs=ext4,xfs,btrfs,zfs", "--layout=single,raid0,raid1,raid10,raid5"]
OVERHEAD = ("fsbench in runs", "the rest")


def measure(pytest_args: list[str], workdir: Path) -> tuple[float, dict]:
    store = workdir / "fsbench.db"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "benchmarks/test_dd.py",
            f"--store={store}", f"--image-dir={workdir / 'images'}", *pytest_args]
    start = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"overhead: the session failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    reader = Store(store, create=False)
    [session] = reader.sessions()
    totals = reader.time_totals(session.id)
    reader.close()
    return wall, totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=float, default=3.0, help="fsbench's overhead allowed, percent (default 3)")
    parser.add_argument("pytest_args", nargs="*", help="after --: the pytest arguments (default: the dd matrix "
                        "of ./fsbench.sh bench)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fsbench-overhead-", dir="/var/tmp") as tmp:
        wall, totals = measure(args.pytest_args or MATRIX, Path(tmp))
    session = totals["session"]
    print(f"process {wall:.1f} s; session {session:.0f} s (start-up, collection and set-up before the session's "
          f"clock: {wall - session:.1f} s)")
    for name, seconds, share in time_shares(totals):
        print(f"  {name:22} {'not recorded' if seconds is None else f'{seconds:8.1f} s'}"
              + ("" if share is None else f"  {share * 100:5.1f} %"))
    overhead = sum(seconds for name, seconds, _ in time_shares(totals) if name in OVERHEAD and seconds is not None)
    share = overhead / session * 100
    print(f"fsbench's own overhead: {overhead:.1f} s = {share:.1f} % of the session (limit {args.limit:g} %)")
    return 0 if share < args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
