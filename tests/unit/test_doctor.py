"""`fsbench doctor`'s lines: every case row lined up (long reasons wrapped under their column),
the guest remedy named, what zfs-fuse lacks listed, a guest's ZFS line agreeing with the host's,
and the store and image directory a session would use."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_fsbench import doctor
from pytest_fsbench.filesystems import TOOLS
from pytest_fsbench.kernels.guest import GuestFacts
from pytest_fsbench.system.host import Host
from pytest_fsbench.kernels.kernel import DEBIAN_UML, Kernel
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Store
from pytest_fsbench.system.commands import execute

#: this machine's kind: no md, no jfs or reiserfs, zfs-fuse
HOST = Host("6.18", frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "fuse"}),
            frozenset(TOOLS) | {"zfs-fuse", "mdadm"}, has_md=False, zfs_module=False, is_root=True, ram_bytes=8 << 30)


@pytest.fixture(autouse=True)
def uml_installed(monkeypatch):
    monkeypatch.setattr("pytest_fsbench.filesystems.base.uml_installed", lambda: True)


def test_each_filesystem_is_one_row_its_layouts_grouped_by_what_stops_them():
    rows = doctor.host_lines(HOST, width=100)[1:]
    assert max(map(len, rows)) <= 100
    text = {r.split()[0]: r.split(None, 1)[1] for r in rows if not r.startswith(" ")}
    assert text["ext4"] == "single: ok; raid0, raid1, raid10, raid5: needs md"
    assert text["btrfs"] == "ok (every layout)"
    assert text["jfs"] == "single: needs jfs; raid0, raid1, raid10, raid5: needs jfs, md"
    column = len("needs reiserfs  ")
    assert all(r[column - 2:column] == "  " and r[column] != " " for r in rows if not r.startswith(" "))


def test_each_reason_a_guest_kernel_removes_is_said_once_with_its_remedy():
    lines = doctor.host_lines(HOST, width=10_000)
    assert sum("this kernel has no md driver" in line for line in lines) == 1
    [md] = [line for line in lines if line.startswith("needs md ")]
    assert md.endswith("; run it in a guest kernel with --kernel=host+uml (or --kernel=uml)"), md
    assert "ext4" not in md and "raid0" not in md
    assert [line.split()[1] for line in lines if line.startswith("needs ")] == ["md", "jfs", "reiserfs"]


def test_the_last_line_counts_the_cases_and_names_what_runs_the_rest(monkeypatch):
    # ext2/3/4 and xfs on one disk, btrfs and zfs on every layout; md, jfs and reiserfs need a guest
    assert doctor.summary_line(HOST) == ("14 of 40 cases can run here; 26 need md, jfs or reiserfs: "
                                         "--kernel=host+uml runs them in a guest kernel")
    assert doctor.summary_line(dataclasses.replace(HOST, has_md=True)).startswith(
        "30 of 40 cases can run here; 10 need jfs or reiserfs: ")
    no_root = dataclasses.replace(HOST, is_root=False)
    assert doctor.summary_line(no_root) == "0 of 40 cases can run here; 40 cannot, for the reasons above"
    monkeypatch.setattr("pytest_fsbench.filesystems.base.uml_installed", lambda: False)
    assert doctor.summary_line(HOST).endswith("install user-mode-linux (Debian package), then --kernel=host+uml "
                                              "runs them in a guest kernel")


def test_what_zfs_fuse_lacks_is_listed_and_openzfs_lacks_nothing():
    [limit] = [r for r in doctor.host_lines(HOST, width=10_000) if r.startswith("zfs options")]
    assert "no compression=lz4, zstd" in limit and "no recordsize above 128K" in limit
    openzfs = dataclasses.replace(HOST, zfs_module=True)
    assert not [r for r in doctor.host_lines(openzfs, width=10_000) if r.startswith("zfs options")]


def test_a_guest_kernel_says_zfs_is_the_hosts_not_that_there_is_none():
    guest = dataclasses.replace(HOST, kernel="6.1.176", has_md=True, filesystems=HOST.filesystems - {"fuse"})
    facts = GuestFacts(guest, "6.1.176", ("raid1",))
    lines = doctor.guest_lines(Kernel("uml", DEBIAN_UML), facts, None, width=10_000)
    [zfs] = [line for line in lines if line.split()[0] == "zfs"]
    assert "ZFS runs under the host's kernel (its OpenZFS module or zfs-fuse daemon" in zfs and "neither" not in zfs
    assert [line.split(None, 1)[1] for line in lines if line.split()[0] == "ext4"] == [
        "single, raid0, raid1, raid10, raid5"]


def test_a_virtual_machine_with_openzfs_runs_zfs_and_says_it_is_emulated():
    guest = dataclasses.replace(HOST, kernel="6.1.0-56-amd64", has_md=True, zfs_module=True)
    facts = GuestFacts(guest, "6.1.0-56-amd64", ("raid1", "zfs"), "2.1.11-1+deb12u1")
    lines = doctor.guest_lines(Kernel("vm", Path("/boot/vmlinuz-6.1.0-56-amd64"), vm=True), facts, None,
                               width=10_000, accel="tcg")
    assert "a virtual machine, EMULATED (TCG), OpenZFS 2.1.11-1+deb12u1" in lines[0]
    [zfs] = [line for line in lines if line.split()[0] == "zfs"]
    assert zfs.split(None, 1)[1] == "single, raid0, raid1, raid10, raid5"
    narrow = doctor.guest_lines(Kernel("vm", Path("/boot/vmlinuz-6.1.0-56-amd64"), vm=True), facts, None,
                                width=80, accel="tcg")
    assert max(map(len, narrow)) <= 80 and narrow[1].startswith("  ") and narrow[0].startswith("kernel vm (")


def test_a_guest_kernel_lists_its_workloads_as_the_host_does_but_pts():
    guest = dataclasses.replace(HOST, kernel="6.1.0-56-amd64", has_md=True)
    facts = GuestFacts(guest, "6.1.0-56-amd64", ("raid1",))
    lines = doctor.guest_lines(Kernel("vm", Path("/boot/vmlinuz-6.1.0-56-amd64"), vm=True), facts, None,
                               width=10_000, accel="tcg")
    rows = lines[lines.index("  workloads:") + 1:]
    host = doctor.workload_lines(width=10_000)[1:]
    # the guest runs the host's programs (it shares its root): each workload's word is the host's
    assert [r.split(None, 1) for r in rows[:-1]] == [r.split(None, 1) for r in host]
    assert {r.split()[0] for r in rows} >= {"dd", "fio", "iozone", "dbench", "bonnie", "filebench", "pts"}
    assert rows[-1].split(None, 1) == ["pts", "skip: a PTS profile is installed and run on the host's kernel only, "
                                              "not in a guest"]


def test_the_store_a_session_would_use(tmp_path):
    missing = tmp_path / "results" / "fsbench.db"
    line, ok = doctor.store_line(missing, str(missing))
    assert ok and line == f"store: {missing}: not made yet; the first session makes it there"
    assert not missing.parent.exists(), "doctor makes nothing"
    store = Store(tmp_path / "fsbench.db")
    session = store.start_session("t-1", {"argv": []}, {})
    row = store.case_row(session, "t", "ext4-single", {}, "dd", {}, "drop", "random", {})
    store.add_run(row, False, "t", 1.0, "drop", [Metric("dd.write", 1.0, "MB/s", Direction.HIGHER)])
    store.close()
    line, ok = doctor.store_line(tmp_path / "fsbench.db", "s.db")
    assert ok and line == "store: s.db: 1 session; sessions write into it"
    (tmp_path / "junk.db").write_text("not a database\n" * 100)
    line, ok = doctor.store_line(tmp_path / "junk.db", "junk.db")
    assert not ok and line.startswith("store: junk.db: cannot be used: ") and "is not an SQLite database" in line


def test_the_image_directory_a_session_would_use(tmp_path):
    line, ok = doctor.image_dir_line(str(tmp_path / "images"), execute)
    assert ok and line.startswith(f"image dir: {tmp_path / 'images'} (made when a session starts): ")
    assert " free on " in line and not (tmp_path / "images").exists()
    (tmp_path / "afile").write_text("x")
    line, ok = doctor.image_dir_line(str(tmp_path / "afile"), execute)
    assert not ok and line == (f"image dir: {tmp_path / 'afile'}: cannot be used: is not a directory; name a "
                               "directory (it is made if missing)")
    line, ok = doctor.image_dir_line("/proc/fsbench", execute)
    assert not ok and "/proc is not writable here" in line


def test_wrapped_lines_keep_their_words():
    long = "store: " + " ".join(["word"] * 60)
    lines = doctor.wrapped(long, width=50)
    assert all(len(line) <= 50 for line in lines) and " ".join(l.strip() for l in lines) == long
    assert all(line.startswith("  ") for line in lines[1:])


def test_the_command_takes_the_store_and_the_image_dir(tmp_path, capsys):
    from pytest_fsbench import cli

    (tmp_path / "afile").write_text("x")
    code = cli.main(["doctor", "--kernel=host", f"--store={tmp_path / 'fsbench.db'}",
                     f"--image-dir={tmp_path / 'afile'}"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"store: {tmp_path / 'fsbench.db'}: not made yet" in out
    assert f"image dir: {tmp_path / 'afile'}: cannot be used" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


