"""The work a run did: parsers on the kernel's files as captured on this machine's kernels (the
host's 6.18 and the virtual machine's Debian 6.1, each after a 16 MiB dd with fdatasync and a
syncfs), where each file is found, and the figures per byte moved."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_fsbench.measure import work
from pytest_fsbench.metrics import MB, Metric, Direction

DATA = Path(__file__).parents[2] / "data" / "work"


def captured(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize("kernel", ["6.1", "6.18"])
@pytest.mark.parametrize("fs", ["ext4", "xfs", "btrfs"])
def test_a_block_devices_stat_gives_every_field(fs, kernel):
    stat = work.parse_block_stat(captured(f"block-stat-{fs}-{kernel}.txt"))
    assert set(stat) == set(work.BLOCK_STAT_FIELDS)  # 17 fields on both kernels
    assert stat["write_sectors"] * work.SECTOR >= 16 << 20  # the dd's 16 MiB went through it
    assert stat["flush_ios"] >= 1  # fdatasync and syncfs flush a device with a write cache


def test_an_old_kernels_stat_has_fewer_fields_and_a_wrong_line_is_refused():
    eleven = "   60  0  2178  8  37  266  198992  28  0  20  38"
    assert "flush_ios" not in work.parse_block_stat(eleven) and work.parse_block_stat(eleven)["write_ios"] == 37
    with pytest.raises(ValueError, match="not a block device's stat line"):
        work.parse_block_stat("cannot read")


@pytest.mark.parametrize("kernel", ["6.1", "6.18"])
def test_jbd2_info_counts_the_journals_transactions(kernel):
    assert work.parse_jbd2_info(captured(f"jbd2-info-ext4-{kernel}.txt")) == 1
    with pytest.raises(ValueError):
        work.parse_jbd2_info("average:\n")


@pytest.mark.parametrize("kernel", ["6.1", "6.18"])
def test_xfs_stats_count_the_logs_writes(kernel):
    text = captured(f"xfs-stats-xfs-{kernel}.txt")
    logline = next(line for line in text.splitlines() if line.startswith("log "))
    assert work.parse_xfs_stats(text) == int(logline.split()[1]) > 0
    with pytest.raises(ValueError):
        work.parse_xfs_stats("trans 0 0 0\n")


@pytest.mark.parametrize("kernel", ["6.1", "6.18"])
def test_btrfs_commit_stats_count_commits(kernel):
    # 6.1 has no cur_commit_ms line; both say commits first
    assert work.parse_btrfs_commit_stats(captured(f"btrfs-commit_stats-btrfs-{kernel}.txt")) == 1


def test_openzfs_txgs_give_the_newest_synced_group():
    text = captured("zfs-txgs-zfs-6.1.txt")
    assert work.parse_zfs_txgs(text) == 9  # 10 is open (O), not synced
    with pytest.raises(ValueError):
        work.parse_zfs_txgs(text.splitlines()[0])


def stat(**fields) -> dict[str, int]:
    return {name: fields.get(name, 0) for name in work.BLOCK_STAT_FIELDS}


def test_the_work_per_byte_moved():
    before = work.Counters({"loop0": stat(write_sectors=1000, write_ios=10, flush_ios=2)}, commits=5)
    # 128 MiB written twice over (data=journal), 2 more flushes... on a write of 128 MiB
    after = work.Counters({"loop0": stat(write_sectors=1000 + 2 * 262144, write_ios=10 + 530, flush_ios=2 + 44,
                                         in_flight=3)}, commits=5 + 8)
    found = {m.name: m for m in work.work_metrics([(before, after)], read=0, written=128 << 20)}
    assert found["work.written"].value == pytest.approx(2 * 262144 * 512 / MB)
    assert found["work.write_amp"].value == pytest.approx(2.0) and found["work.write_amp"].unit == "x"
    assert found["work.flushes_per_gb"].value == pytest.approx(44 / ((128 << 20) / 1e9))
    assert found["work.commits_per_gb"].value == pytest.approx(8 / ((128 << 20) / 1e9))
    assert found["work.requests_per_mb"].value == pytest.approx(530 / ((128 << 20) / MB))
    assert "work.read_amp" not in found  # it read nothing
    assert all(m.direction is Direction.LOWER for m in found.values())


def test_phases_add_up_and_a_missing_count_is_no_zero():
    a = work.Counters({"loop0": stat(read_sectors=0)}, commits=None)
    b = work.Counters({"loop0": stat(read_sectors=2048, read_ios=4)}, commits=None)
    c = work.Counters({"loop0": stat(read_sectors=4096, read_ios=8)}, commits=None)
    found = {m.name: m.value for m in work.work_metrics([(a, b), (b, c)], read=2 << 20, written=0)}
    assert found["work.read_amp"] == pytest.approx(1.0) and found["work.read_requests"] == 8
    assert "work.commits" not in found and "work.flushes_per_gb" not in found
    assert work.work_metrics([(work.Counters(), work.Counters())], 0, 0) == []  # no device counted


def test_a_figures_bytes_are_counted_once():
    dd = Metric("dd.write", 1.0, "MB/s", Direction.HIGHER, io=("write", 100))
    mixed = Metric("filebench.mb_per_s", 1.0, "MB/s", Direction.HIGHER, io=(("read", 30), ("write", 20)))
    ops = Metric("filebench.ops_per_s", 1.0, "ops/s", Direction.HIGHER, same_io_as="filebench.mb_per_s")
    assert work.moved_bytes([dd, mixed, ops, Metric("cpu.tool", 1.0, "%", Direction.LOWER)]) == (30, 120)


def test_where_the_commits_are_counted(tmp_path):
    proc, sys_fs = tmp_path / "proc", tmp_path / "sys/fs"
    (sys_fs / "btrfs/1234-abcd/devices/loop7").mkdir(parents=True)
    (sys_fs / "btrfs/1234-abcd/commit_stats").write_text("commits 3\n")
    assert work.commit_file("btrfs", "/mnt", ["loop7"], proc=proc, sys_fs=sys_fs) == \
        sys_fs / "btrfs/1234-abcd/commit_stats"
    assert "no Btrfs filesystem" in work.commit_file("btrfs", "/mnt", ["loop8"], proc=proc, sys_fs=sys_fs)
    (proc / "spl/kstat/zfs/pool-1").mkdir(parents=True)
    assert "this kernel has no" in work.commit_file("zfs-txgs", "/mnt", [], "pool-1", proc=proc, sys_fs=sys_fs)
    assert "keeps no commit counter" in work.commit_file("", "/mnt", [], proc=proc, sys_fs=sys_fs)


def test_an_ext4_mount_is_counted_by_its_journal_or_counts_none_without_one(tmp_path):
    here = work.mount_device(str(tmp_path))
    if here is None:
        pytest.skip(f"{tmp_path} is on no block device (tmpfs, overlay): its journal cannot be named")
    proc = tmp_path / "proc"
    (proc / "fs/jbd2").mkdir(parents=True)
    assert work.commit_file("jbd2", str(tmp_path), [], proc=proc) == work.NO_JOURNAL
    (proc / "fs/jbd2" / f"{here}-8").mkdir()
    (proc / "fs/jbd2" / f"{here}-8/info").write_text("7 transactions (7 requested), each up to 8192 blocks\n")
    found = work.commit_file("jbd2", str(tmp_path), [], proc=proc)
    assert found == proc / "fs/jbd2" / f"{here}-8/info"
    assert work.read_counters(work.Place((), ("jbd2", found))).commits == 7
    journal_less = work.Place((), None, work.NO_JOURNAL, journal_less=True)
    assert work.read_counters(journal_less).commits == 0
    assert journal_less.record()["commits"].startswith("none: the filesystem has no journal")


def test_a_real_block_device_is_counted():
    """The counters of a real block device of this machine, read twice: they only grow."""
    names = sorted(os.listdir("/sys/block"))
    if not names:
        pytest.skip("this machine shows no block device under /sys/block")
    place = work.Place((names[0],), None, "none here", "host")
    first, second = work.read_counters(place), work.read_counters(place)
    assert set(first.devices[names[0]]) >= set(work.BLOCK_STAT_FIELDS[:11])
    assert all(second.devices[names[0]][k] >= v for k, v in first.devices[names[0]].items() if k != "in_flight")
    assert place.record()["devices"] == f"the host's block devices {names[0]} (/sys/block/DEV/stat)"


def test_a_syncfs_the_kernel_refuses_is_a_commands_failure(tmp_path):
    from pytest_fsbench.errors import CommandError

    work.syncfs(str(tmp_path))  # a directory of a mounted filesystem: fine
    with pytest.raises(CommandError, match=r"^syncfs .*missing: cannot open it: No such file or directory$"):
        work.syncfs(str(tmp_path / "missing"))
