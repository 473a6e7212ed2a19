"""fsbench.sh installs for each command what it needs (issue 35): the quick bench only the
filesystems' tools and the User-mode Linux guest, never the virtual machine's packages (zfs-dkms
builds OpenZFS for a kernel the bench does not boot), Slurm, PostgreSQL or Chromium; those come
with --kernel=vm, `setup --kernel=vm` or `test`, which install everything the suite needs. Read from the
script itself (`./fsbench.sh packages ...` lists, installs nothing)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ONLY_THE_SUITE = {"zfs-dkms", "qemu-system-x86", "slurmd", "slurmctld", "munge", "postgresql", "chromium"}


def packages(*args: str) -> set[str]:
    done = subprocess.run([str(REPO / "fsbench.sh"), "packages", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_the_quick_bench_installs_only_what_it_needs():
    bench = packages("bench")
    assert {"btrfs-progs", "xfsprogs", "e2fsprogs", "zfs-fuse", "user-mode-linux", "mdadm"} <= bench
    assert not bench & ONLY_THE_SUITE and "fio" not in bench and "linux-source" not in bench
    other_cases = packages("bench", "benchmarks/", "-m", "not slow")
    assert {"fio", "iozone3", "bonnie++", "dbench", "linux-source"} <= other_cases
    assert not other_cases & ONLY_THE_SUITE
    vm = packages("bench", "--kernel=host+vm")
    assert {"zfs-dkms", "qemu-system-x86", "busybox-static"} <= vm and not vm & {"slurmd", "postgresql", "chromium"}


def test_the_suite_installs_everything():
    everything = packages("test")
    assert ONLY_THE_SUITE | packages("bench", "--kernel=vm", "benchmarks/") <= everything
    assert packages("setup", "--kernel=vm") == everything
    # setup alone: everything but the virtual machine's (zfs-dkms built 9 of a fresh machine's 13 minutes)
    assert packages("setup") == everything - packages("bench", "--kernel=vm") | packages("bench")
    assert not packages("setup") & {"zfs-dkms", "qemu-system-x86", "busybox-static"}


def test_an_unknown_command_is_refused_in_one_line():
    done = subprocess.run([str(REPO / "fsbench.sh"), "packages", "nightly"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip() == f"usage: {REPO / 'fsbench.sh'} packages bench|test|setup " \
        "[pytest args]"
