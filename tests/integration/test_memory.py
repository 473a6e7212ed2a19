"""--memory as a study that limited RAM meets it: a file larger than the limit is read from the
storage even with the cache left warm, where without the limit the page cache serves it; the
limit is in the case's manifest, and its control group is gone after the session."""

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import execute_pytest
from pytest_fsbench.system.memory import NAME_PREFIX, hierarchy

pytestmark = [pytest.mark.root, pytest.mark.skipif(hierarchy() is None, reason="no memory control group here")]


def session(tmp_path: Path, name: str, *extra: str) -> tuple[float, dict]:
    store = tmp_path / f"{name}.db"
    done = execute_pytest(["--pyargs", "pytest_fsbench.benchmarks.test_dd", "-k", "dd_read", "--fs=ext4",
                           "--cache=warm", "--dd-size=256M", "--runs=1", "--warmup=0", f"--store={store}",
                           f"--image-dir={tmp_path / 'images'}", *extra], cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with sqlite3.connect(store) as db:
        [share] = [v for (p, v) in db.execute("SELECT m.params, m.value FROM metrics m WHERE m.name = 'disk.share'")
                   if json.loads(p)["metric"] == "dd.read"]
        [manifest] = [json.loads(m) for (m,) in db.execute("SELECT manifest FROM cases")]
    return share, manifest


def test_a_file_larger_than_the_limit_is_read_from_the_storage(tmp_path):
    cached, plain = session(tmp_path, "plain")
    limited, manifest = session(tmp_path, "limited", "--memory=96M")
    assert cached < 50, f"without --memory the warm cache served {100 - cached:.0f}% of the 256M read"
    assert limited >= 50, f"with --memory=96M only {limited:.0f}% of the 256M read reached the disks"
    assert "memory_limit" not in plain
    assert manifest["memory_limit"] == {"bytes": 96 << 20, "cgroup": hierarchy().version}
    assert not [p for p in hierarchy().root.iterdir() if p.name.startswith(NAME_PREFIX)]


@pytest.mark.parametrize("args, message", [
    (["--memory=1M"], "--memory='1M': below 64M"),
    (["--memory=lots"], "--memory"),
    (["--memory=2G", "--kernel=host,uml"], "--memory=2G with cases under uml: a guest kernel has 2G of memory, so "
                                           "the limit would limit nothing there; give less than 2G"),
])
def test_a_bad_limit_is_one_line(tmp_path, args, message):
    done = execute_pytest(["--pyargs", "pytest_fsbench.benchmarks.test_dd", "--collect-only", "-q",
                           f"--store={tmp_path / 's.db'}", *args], cwd=tmp_path)
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert done.returncode == 4 and len(errors) == 1 and message in errors[0], done.stderr


def test_cleanup_removes_the_group_of_a_killed_session(tmp_path):
    from pytest_fsbench.system.commands import execute
    from pytest_fsbench.targets.cleanup import Leftovers, find_leftovers, remove_leftovers

    dead = hierarchy().root / f"{NAME_PREFIX}4194999-abcd-memory"  # above any pid this kernel hands out
    live = hierarchy().root / f"{NAME_PREFIX}{__import__('os').getpid()}-abcd-memory"
    dead.mkdir()
    live.mkdir()
    try:
        found = find_leftovers(execute, tmp_path / "run")
        assert dead in found.memory_groups and live not in found.memory_groups
        mine = Leftovers(memory_groups=[dead])  # another session's leftovers are its own test's to sweep
        assert remove_leftovers(mine, execute) == [] and not dead.exists() and live.exists()
    finally:
        for group in (dead, live):
            if group.exists():
                group.rmdir()


def test_bonnie_runs_with_the_ram_it_is_told_it_has(tmp_path):
    """bonnie++ -r says how much RAM the machine has and sizes its file at twice that; fsbench
    makes -r true with a memory control group, so its block read reaches the storage on a machine
    of any RAM (with 24 GiB, a 1 GiB file was the page cache's)."""
    store = tmp_path / "s.db"
    # 1 GiB: bonnie++ reports a test under 0.5 s as "+++++", and 512M read at ~1 GB/s is at that edge
    done = execute_pytest(["--pyargs", "pytest_fsbench.benchmarks.test_bonnie", "--fs=ext4", "--bonnie-size=1024",
                           "--runs=1", "--warmup=0", f"--store={store}", f"--image-dir={tmp_path / 'images'}"],
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with sqlite3.connect(store) as db:
        shares = {json.loads(p)["metric"]: v for (p, v) in db.execute(
            "SELECT params, value FROM metrics WHERE name = 'disk.share'")}
        [manifest] = [json.loads(m) for (m,) in db.execute("SELECT manifest FROM cases")]
    assert manifest["memory_limit"] == {"bytes": 512 << 20, "cgroup": hierarchy().version}
    assert shares["bonnie.block_read"] >= 50, shares
    assert not [p for p in hierarchy().root.iterdir() if p.name.startswith(NAME_PREFIX)]
