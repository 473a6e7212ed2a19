"""Cases in a virtual machine (--kernel=vm): Debian's kernel booted by virtme-ng, one guest for
this whole test session (a boot costs half a minute under emulation); md RAID with XFS and ext4
and OpenZFS pools on its virtio disks, built, measured and torn down inside (every layout, with
ashift, recordsize, compression, dedup, checksums, and log, cache and special vdevs on disks of
their own; a property value the guest's OpenZFS lacks skipped, naming its version); a guest that dies
fails its case with its console and is booted again, and so is one stopped at once when a request
to it is interrupted; --memory's limit applied in the guest's own control group; through pytest,
the plugin's cases in the host's store with the kernel A/B of a kernel against itself; a killed
session's guest removed by `fsbench cleanup`."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from conftest import execute_pytest, gone_soon, interrupted_after, start_session, sweep
from pytest_fsbench.measure.cache_check import FROM_CACHE_BELOW, SHARE
from pytest_fsbench.case import LAYOUT_DEVICES, CaseSpec
from pytest_fsbench.filesystems import FILESYSTEMS
from pytest_fsbench.kernels.guest import GuestError
from pytest_fsbench.kernels.probe import probe
from pytest_fsbench.kernels.kernel import debian_kernel, parse_kernels
from pytest_fsbench.session import FsbenchSession
from pytest_fsbench.settings import Settings
from pytest_fsbench.system.commands import execute
from pytest_fsbench.system.memory import MemoryLimit
from pytest_fsbench.kernels.vm import vm_missing
from pytest_fsbench.workloads.bonnie import Bonnie
from pytest_fsbench.workloads.dbench import Dbench
from pytest_fsbench.workloads.dd import DdRead, DdWrite
from pytest_fsbench.workloads.filebench import MISSING_REASON, Filebench, find_filebench
from pytest_fsbench.workloads.fio import Fio
from pytest_fsbench.workloads.iozone import Iozone

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]
XFS_RAID1 = CaseSpec("xfs", "raid1", kernel="vm")
EXT4_RAID5 = CaseSpec("ext4", "raid5", kernel="vm")
ZFS_RAID10 = CaseSpec("zfs", "raid10", (("compression", "lz4"), ("recordsize", "16M")), kernel="vm")
#: the other layouts, each with options of OpenZFS's that zfs-fuse lacks or that only this one case shows
ZFS_LAYOUTS = {
    "single": (("ashift", "13"), ("compression", "gzip-9"), ("dedup", "on"), ("checksum", "sha512"),
               ("recordsize", "1M")),
    "raid0": (("ashift", "12"), ("compression", "zstd"), ("checksum", "skein")),
    "raid1": (("compression", "zstd-fast"), ("recordsize", "16M"), ("checksum", "edonr")),
    "raid5": (("compression", "gzip"), ("xattr", "sa")),
}
#: each layout's top-level vdevs as zpool status names them (a stripe's are its disks)
ZFS_VDEVS = {"single": [], "raid0": [], "raid1": ["mirror-0"], "raid5": ["raidz1-0"]}
ZFS_LOG_CACHE = CaseSpec("zfs", "raid1", (("log", "mirror"), ("cache", "single"), ("sync", "always")), kernel="vm")
ZFS_SPECIAL = CaseSpec("zfs", "single", (("special", "mirror"),), kernel="vm")


def vm_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "the virtual machine's cases need root (its disks, mdadm, zpool)"
    return vm_missing(parse_kernels("vm")[0])


def qemu_of(marker: str) -> list[int]:
    """Processes (virtme-ng, QEMU) whose command line names marker."""
    return [p.pid for p in psutil.process_iter(["cmdline"]) if any(marker in arg for arg in p.info["cmdline"] or [])]


@pytest.fixture(scope="session")
def vm_session(tmp_path_factory):
    """One fsbench session with Debian's kernel in a virtual machine, booted once for every test
    here; skipped with the reason where it cannot boot."""
    reason = vm_unavailable()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("vm")
    specs = (XFS_RAID1, EXT4_RAID5, ZFS_RAID10)
    settings = Settings(("xfs", "ext4", "zfs"), ("raid1", "raid5", "raid10"), specs, kernels=parse_kernels("vm"),
                        image_dir=tmp / "images", image_size=1 << 30)
    session = FsbenchSession(settings, probe(), execute, run_root=tmp / "run")
    try:
        try:
            reasons = session.targets.unavailable(XFS_RAID1)  # boots the guest
        except GuestError as exc:
            pytest.skip(f"the virtual machine does not boot here: {exc}")
        if reasons:
            pytest.skip("; ".join(reasons))
        yield session
    finally:
        session.close()
        assert not qemu_of(str(session.targets.session_dir)), "the guest outlived its session"
        assert not list((tmp / "images").glob("*.img")), "the guest's disk images outlived its session"


def built(session: FsbenchSession, spec: CaseSpec):
    """The case's target in the session's guest, as the plugin builds it: skipped with the
    guest's reason where it cannot run there."""
    reasons = session.targets.unavailable(spec)
    if reasons:
        pytest.skip("; ".join(reasons))
    return session.target(spec)


def metric(measurement, name: str) -> float:
    return next(m.value for m in measurement.metrics if m.name == name)


def shares(measurement) -> dict[str, float]:
    """Each checked figure's disk.share (%), by the figure's name."""
    return {m.params["metric"]: m.value for m in measurement.metrics if m.name == SHARE}


def from_the_disks(measurement, *figures: str) -> None:
    """Each figure was measured (positive) and its bytes reached the guest's disks: the cache
    policy emptied the guest's page cache, and the disk counters saw the virtio disks."""
    found = {m.name: m.value for m in measurement.metrics}
    for figure in figures:
        assert found.get(figure, 0) > 0, (figure, found)
        assert shares(measurement).get(figure, 0) >= FROM_CACHE_BELOW, (figure, shares(measurement))


def needs_openzfs(session: FsbenchSession) -> str:
    """The guest's OpenZFS version; the test skipped where it has none."""
    version = session.targets.guest_facts(parse_kernels("vm")[0]).openzfs
    if version is None:
        pytest.skip("no OpenZFS in the guest: zfs-dkms built no module for its kernel, or the OpenZFS userland is "
                    "not extracted (./fsbench.sh setup --kernel=vm does both)")
    return version


def top_level_vdevs(status: str) -> list[str]:
    return [line.split()[0] for line in status.splitlines() if line.strip().startswith(("mirror-", "raidz1-"))]


def iostat_rows(text: str) -> dict[str, list[dict[str, int]]]:
    """`zpool iostat -vp`'s rows by section (the pool's data vdevs, logs, cache, special): name,
    allocated bytes and write operations (-H would leave out the sections' names)."""
    sections: dict[str, list[dict[str, int]]] = {"data": []}
    current = "data"
    for line in text.splitlines()[3:]:  # below its two header lines and their rule
        if not line.strip() or line.startswith("-"):
            continue
        name, alloc, _free, _rops, wops, *_ = line.split()
        if name in ("logs", "cache", "special", "dedup"):
            current = name
            sections[current] = []
            continue
        sections[current].append({"name": name, "alloc": int(alloc) if alloc.isdigit() else 0,
                                   "wops": int(wops) if wops.isdigit() else 0})
    return sections


def test_md_raid1_with_xfs_in_the_virtual_machine(vm_session):
    with built(vm_session, XFS_RAID1) as target:
        mdstat = target.execute(["cat", "/proc/mdstat"]).stdout
        assert "active raid1 " in mdstat and "[UU]" in mdstat, mdstat
        assert [d.path for d in target.devices] == ["/dev/vda", "/dev/vdb"]  # virtio disks, not loop devices
        assert target.execute(["findmnt", "-n", "-o", "FSTYPE", str(target.mountpoint)]).stdout.strip() == "xfs"
        kernel = target.manifest["kernel"]
        assert kernel["runs_under"] == "vm" and kernel["accelerator"] in ("kvm", "tcg")
        assert kernel["release"] == debian_kernel().name.removeprefix("vmlinuz-")
        written = target.measure(DdWrite(total_size="64M", direct=True), execute, "drop")
        read = target.measure(DdRead(total_size="64M"), execute, "drop")
        assert "host cache bypassed (QEMU cache=none)" in written.cache
        assert metric(written, "dd.write") > 0 and metric(read, "dd.read") > 0
        assert metric(written, "disk.write") >= 64 * 1.048576  # reached the array's members, both of them
        # the work, counted inside the guest on its own disks (issue 41): a mirror writes every byte twice
        assert written.counted["devices"] == "the virtual machine's block devices vda, vdb (/sys/block/DEV/stat)"
        assert written.counted["commits"].startswith("XFS log writes (/sys/fs/xfs/md")
        assert 1.95 < metric(written, "work.write_amp") < 2.2 and metric(written, "work.commits") >= 1
    images = vm_session.targets.vm_guest(parse_kernels("vm")[0]).images
    # the next case starts on empty disks: the discard punched the case's blocks out of the images
    assert all(os.stat(image).st_blocks * 512 < 16 << 20 for image in images[:2])


def test_md_raid5_with_ext4_on_disks_the_last_case_used(vm_session):
    with built(vm_session, EXT4_RAID5) as target:
        signatures = target.execute(["blkid", "-p", "/dev/vdc"]).stdout
        assert "linux_raid_member" in signatures  # this case's array, on a disk the last case wiped
        assert "active raid5 " in target.execute(["cat", "/proc/mdstat"]).stdout
        assert metric(target.measure(DdWrite(total_size="32M"), execute, "drop"), "dd.write") > 0
    assert vm_session.targets.vm_guest(parse_kernels("vm")[0]).boots == 1  # one guest for every case


def test_openzfs_in_the_virtual_machine_compresses_with_lz4(vm_session):
    needs_openzfs(vm_session)
    with built(vm_session, ZFS_RAID10) as target:
        status = target.execute(["zpool", "status", "-P"]).stdout
        assert status.count("mirror-") == 2 and "/dev/vda1" in status, status
        assert target.manifest["applied"]["version"].startswith("zfs-2.")  # OpenZFS, not zfs-fuse's 0.7
        assert "recordsize\t16M" in target.manifest["applied"]["properties"]
        assert target.manifest["kernel"]["openzfs"].startswith("2.")
        written = target.measure(DdWrite(total_size="64M", data="50%"), execute, "drop")
        assert metric(written, "fs.compressratio") > 1.5
        assert "pool export/import" in written.cache  # the ARC emptied the only way it can be
        # its transaction groups counted from OpenZFS's kstat, after `zpool sync` (issue 41)
        assert written.counted["commits"].startswith("ZFS transaction groups (/proc/spl/kstat/zfs/")
        # two mirrors write every byte twice, compressed: device bytes per byte about 2 / the ratio
        ratio = metric(written, "fs.compressratio")
        assert metric(written, "work.commits") >= 1 and 0.8 < metric(written, "work.write_amp") * ratio / 2 < 1.3


def test_fio_writes_and_rereads_in_the_virtual_machine(vm_session):
    with built(vm_session, XFS_RAID1) as target:
        written = target.measure(Fio(rw="write", bs="128k", size="32M"), execute, "drop")
        from_the_disks(written, "fio.write.bw")
        assert metric(written, "fio.write.iops") > 0 and metric(written, "fio.write.clat_p99") > 0
        # a read pattern: its file written once, unmeasured; the cache emptied before the timed reads
        reread = target.measure(Fio(rw="randread", bs="4k", size="32M", runtime=3), execute, "drop")
        from_the_disks(reread, "fio.read.bw")
        direct = target.measure(Fio(rw="read", bs="1m", size="32M"), execute, "direct")
        assert "O_DIRECT" in direct.cache and '"direct" : "1"' in direct.completed.stdout
        from_the_disks(direct, "fio.read.bw")


def test_phased_iozone_in_the_virtual_machine(vm_session):
    with built(vm_session, XFS_RAID1) as target:
        done = target.measure(Iozone(tests=("write", "read", "random_read"), record="64k", file="32M", cpu=True),
                              execute, "drop")
        assert "(before each of 3 phases)" in done.cache  # write, then each read group on the kept file
        from_the_disks(done, "iozone.write", "iozone.read", "iozone.random_read")
        assert metric(done, "iozone.write.cpu") > 0
        both = target.measure(Iozone(tests=("write", "read"), record="64k", file="16M", processes=2), execute, "drop")
        from_the_disks(both, "iozone.write", "iozone.read")


def test_dbench_in_the_virtual_machine(vm_session):
    with built(vm_session, EXT4_RAID5) as target:
        done = target.measure(Dbench(clients=2, seconds=10), execute, "drop")
        assert metric(done, "dbench.throughput") > 0 and metric(done, "dbench.max_latency") > 0
        assert not shares(done)  # dbench says no byte counts, so none of its figures is checked
        assert metric(done, "disk.write") > 0  # the clients' files reached the array's disks


#: bonnie++'s file, big enough that its block tests take seconds in an emulated guest: it reports a
#: test shorter than 500 ms as "+++++", and 64M at the guest's ~115 MB/s was at that edge (a CI run
#: found every block test "+++++")
BONNIE_MB = 512


def test_bonnie_in_the_virtual_machine(vm_session):
    with built(vm_session, EXT4_RAID5) as target:
        done = target.measure(Bonnie(size_mb=BONNIE_MB, files_k=1), execute, "drop")
        from_the_disks(done, "bonnie.block_write", "bonnie.block_rewrite")
        # a file test bonnie++ finds too fast to time ("+++++") is left out, never a zero
        creates = [m.value for m in done.metrics if m.name in ("bonnie.seq_create", "bonnie.rand_create")]
        assert all(value > 0 for value in creates), creates


def test_filebench_in_the_virtual_machine(vm_session):
    binary = find_filebench()
    if binary is None:
        pytest.skip(MISSING_REASON)
    with built(vm_session, XFS_RAID1) as target:
        done = target.measure(Filebench.from_installation("varmail", runtime=5, binary=binary), execute, "drop")
        assert metric(done, "filebench.ops_per_s") > 0 and metric(done, "filebench.mb_per_s") > 0


def test_every_filesystem_driver_and_md_layout_measures_in_the_virtual_machine(vm_session):
    """Each driver on a layout (the RAID layouts in turn; btrfs single, whose device the guest's
    kernel drops at the unmount), built, measured by fio from its disks and torn down."""
    raids = itertools.cycle([layout for layout in LAYOUT_DEVICES if layout != "single"])
    specs = [CaseSpec(fs, "single" if fs == "btrfs" else next(raids), kernel="vm") for fs in FILESYSTEMS]
    measured = []
    for spec in specs:
        if vm_session.targets.unavailable(spec):
            continue  # ZFS without OpenZFS in the guest: the test above says why
        with built(vm_session, spec) as target:
            from_the_disks(target.measure(Fio(rw="write", bs="1m", size="16M"), execute, "drop"), "fio.write.bw")
        measured.append(spec.fs)
    assert set(measured) >= set(FILESYSTEMS) - {"zfs"}, measured


@pytest.mark.parametrize("layout", list(ZFS_LAYOUTS))
def test_openzfs_pools_of_every_layout_with_their_options(vm_session, layout):
    needs_openzfs(vm_session)
    spec = CaseSpec("zfs", layout, ZFS_LAYOUTS[layout], kernel="vm")
    with built(vm_session, spec) as target:
        status = target.execute(["zpool", "status", "-P"]).stdout
        assert top_level_vdevs(status) == ZFS_VDEVS[layout], status
        assert status.count("/dev/vd") == spec.devices_needed, status
        ashift = target.execute(["zpool", "get", "-H", "-o", "value", "ashift"]).stdout.strip()
        assert ashift == spec.option("ashift") or (spec.option("ashift") is None and ashift == "0")
        applied = target.manifest["applied"]["properties"]
        assert all(f"{key}\t{value}\tlocal" in applied for key, value in spec.options if key not in ("ashift", "xattr"))
        written = target.measure(DdWrite(total_size="16M", data="50%"), execute, "drop")
        assert metric(written, "fs.compressratio") > 1.5  # every algorithm finds the zeros of half of each block
        if spec.option("dedup") == "on":  # two more copies of the file: their blocks are stored once
            copy = f"cp {target.mountpoint}/fsbench/dd.dat {target.mountpoint}/fsbench/copy"
            target.execute(["sh", "-c", f"{copy}1 && {copy}2 && zpool sync"])
            ratio = target.execute(["zpool", "list", "-H", "-o", "dedupratio"]).stdout.strip()
            assert float(ratio.rstrip("x")) >= 2.9, ratio


def test_openzfs_log_and_cache_vdevs_on_disks_of_their_own(vm_session):
    needs_openzfs(vm_session)
    with built(vm_session, ZFS_LOG_CACHE) as target:
        assert len(target.devices) == 5  # the mirror's two, the log's two, the cache's one
        status = target.execute(["zpool", "status", "-P"]).stdout
        logs, cache = status.split("\tlogs")[1].split("\tcache")
        assert top_level_vdevs(logs) == ["mirror-1"] and "/dev/vdc1" in logs and "/dev/vdd1" in logs, status
        assert "/dev/vde1" in cache, status
        target.measure(DdWrite(total_size="16M"), execute, "drop")
        rows = iostat_rows(target.execute(["zpool", "iostat", "-vp"]).stdout)
        # sync=always: every write went through the intent log, which is the log mirror's
        assert rows["logs"][0]["name"] == "mirror-1" and rows["logs"][0]["wops"] > 0, rows
        # the L2ARC is not rebuilt at the import that empties the ARC before a run: the cache vdev starts cold
        rebuild = target.execute(["cat", "/sys/module/zfs/parameters/l2arc_rebuild_enabled"]).stdout.strip()
        assert rebuild == "0", rebuild


def test_openzfs_special_vdev_takes_the_metadata(vm_session):
    needs_openzfs(vm_session)
    with built(vm_session, ZFS_SPECIAL) as target:
        status = target.execute(["zpool", "status", "-P"]).stdout
        special = status.split("\tspecial")[1]
        assert top_level_vdevs(special) == ["mirror-1"] and "/dev/vdb1" in special and "/dev/vdc1" in special, status
        target.measure(DdWrite(total_size="16M"), execute, "drop")
        rows = iostat_rows(target.execute(["zpool", "iostat", "-vp"]).stdout)
        assert rows["special"][0]["alloc"] > 0, rows  # the file's metadata: indirect blocks, dnodes
        assert rows["data"][1]["alloc"] >= 16 << 20, rows  # its data, on the pool's own disk


def test_a_value_the_guests_openzfs_lacks_is_skipped_naming_the_version(vm_session):
    version = needs_openzfs(vm_session)
    spec = CaseSpec("zfs", "single", (("checksum", "blake3"),), kernel="vm")
    reasons = vm_session.targets.unavailable(spec)
    if tuple(map(int, version.split("-")[0].split(".")[:2])) >= (2, 2):
        assert reasons == []
    else:
        assert reasons == [f"checksum=blake3 needs OpenZFS 2.2; the guest's is {version.split('-')[0]} (its checksum "
                           "values: on | off | fletcher2 | fletcher4 | sha256 | sha512 | skein | edonr)"]


def test_a_guest_that_dies_fails_its_case_with_its_console_and_is_booted_again(vm_session):
    kernel = parse_kernels("vm")[0]
    with pytest.raises(GuestError) as error:
        with built(vm_session, XFS_RAID1) as target:
            target.execute(["sh", "-c", "echo c > /proc/sysrq-trigger"])
    said = str(error.value)
    assert said.startswith("guest kernel vm (execute): ") and "its console ended:" in said, said
    assert "it panicked: " in said and "sysrq triggered crash" in said, said  # the kernel's own words
    with built(vm_session, XFS_RAID1) as target:
        assert "active raid1 " in target.execute(["cat", "/proc/mdstat"]).stdout
    assert vm_session.targets.vm_guest(kernel).boots == 2


def test_a_request_interrupted_stops_the_guest_at_once_and_the_next_case_boots_a_fresh_one(vm_session):
    """Its agent serves one request at a time, so the guest of an interrupted request is killed at
    once, its disk images removed; its target answers nothing more, and the next case boots a
    fresh guest."""
    kernel = parse_kernels("vm")[0]
    boots = vm_session.targets.vm_guest(kernel).boots
    with built(vm_session, XFS_RAID1) as target:
        images, name = list(target.guest.images), target.guest.name
        with pytest.raises(KeyboardInterrupt), interrupted_after(2):
            target.execute(["sleep", "600"])
        assert not qemu_of(name), "the guest was not stopped at once"
        assert images and not any(image.exists() for image in images)
        with pytest.raises(GuestError) as error:
            target.execute(["true"])
        assert str(error.value) == ("guest kernel vm was stopped when its execute request went unanswered "
                                    "(KeyboardInterrupt: signal SIGALRM); what it had built is gone with it")
    with built(vm_session, XFS_RAID1) as target:
        assert "active raid1 " in target.execute(["cat", "/proc/mdstat"]).stdout
    assert vm_session.targets.vm_guest(kernel).boots == boots + 1


def test_a_memory_limit_applies_in_the_guests_own_control_group(vm_session):
    """--memory in the virtual machine: a warm-cache read of a file larger than the limit reaches
    its virtio disks, and the case's manifest carries the limit."""
    with built(vm_session, XFS_RAID1) as target:
        read = target.measure(DdRead(total_size="256M"), execute, "warm", MemoryLimit(96 << 20, "vm-test"))
        assert shares(read)["dd.read"] >= 50, shares(read)
        assert target.manifest["memory_limit"] == {"bytes": 96 << 20, "cgroup": "v2"}


def small(tmp_path: Path, dd_size: str = "32M") -> list[str]:
    return [f"--image-dir={tmp_path / 'images'}", "--image-size=1G", f"--store={tmp_path / 'fsbench.db'}",
            "--warmup=0", f"--dd-size={dd_size}"]


def test_openzfs_cases_and_a_kernel_against_itself_through_pytest(tmp_path):
    """The plugin's path: two guests (the same kernel twice), paired rounds, OpenZFS's cases in the
    host's store with their manifests, the summary's labels."""
    reason = vm_unavailable()
    if reason:
        pytest.skip(reason)
    done = execute_pytest(["benchmarks/test_dd.py", "-k", "dd and write", "--kernel", f"vm,vm:again={debian_kernel()}",
                       "--fs=zfs", "--fs-opt", "zfs:compression=lz4", "--data=50%", "--runs=5",
                       *small(tmp_path, "16M")], cwd=REPO, timeout=1500)
    (tmp_path / "stdout").write_text(done.stdout)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "paired: vm-again-zfs-single against vm-zfs-single, 5 interleaved rounds" in done.stdout, done.stdout[-3000:]
    assert "10 passed" in done.stdout
    table = done.stdout.split("fsbench paired comparison")[1]
    row = next(line for line in table.splitlines() if line.startswith("test_dd_write[vm-again-zfs-single"))
    # n (5/5) in its column, or said once under the table where a narrow terminal spares the column
    assert "regression" not in row and ("5/5" in row or "n of every row: 5/5" in " ".join(table.split())), table
    assert "vm-*: measured in a virtual machine (" in done.stdout and ", OpenZFS 2." in done.stdout
    assert "booting guests " in done.stdout.split("\ntime: session ")[1]  # the session's time accounting
    db = sqlite3.connect(tmp_path / "fsbench.db")
    cases = db.execute("SELECT case_id, manifest FROM cases").fetchall()
    ratios = [value for (value,) in db.execute("SELECT value FROM metrics WHERE name = 'fs.compressratio'")]
    db.close()
    kernels = [json.loads(manifest)["kernel"] for _, manifest in cases]
    assert {k["label"] for k in kernels} == {"vm", "vm-again"} and all(k["openzfs"].startswith("2.") for k in kernels)
    if kernels[0]["accelerator"] == "tcg":
        assert "test_dd_write[vm-zfs-single-data=50%-1M] emulated" in done.stdout
    assert len(ratios) == 10 and all(ratio > 1.5 for ratio in ratios)
    assert not qemu_of(str(tmp_path)) and not list((tmp_path / "images").glob("*.img"))


#: each workload's benchmark case, small: a few tens of MB, seconds of dbench
WORKLOAD_CASES = ["benchmarks/test_fio.py", "benchmarks/test_iozone.py", "benchmarks/test_dbench.py",
                  "benchmarks/test_bonnie.py", "benchmarks/test_filebench.py", "--fio-rw=write,randread",
                  "--fio-bs=128K", "--fio-size=16M", "--iozone-record=64K", "--iozone-file=16M",
                  "--iozone-tests=write,read", "--iozone-processes=2", "--dbench-clients=2", "--dbench-time=5",
                  f"--bonnie-size={BONNIE_MB}", "--bonnie-files=1", "--filebench-personality=varmail", "--filebench-runtime=5"]


def test_every_workloads_benchmark_case_runs_in_one_virtual_machine_through_pytest(tmp_path):
    """The plugin's cases of fio, IOzone (both modes), dbench, bonnie++ and Filebench (where it is
    installed) in one guest, into the host's store with their disk shares."""
    reason = vm_unavailable()
    if reason:
        pytest.skip(reason)
    done = execute_pytest([*WORKLOAD_CASES, "--kernel=vm", "--fs=xfs", "--layout=raid1", "--runs=1", "-rs",
                       *small(tmp_path)], cwd=REPO, timeout=2400)
    (tmp_path / "stdout").write_text(done.stdout)
    assert done.returncode == 0, done.stdout[-3000:]
    installed = find_filebench() is not None
    assert f"{6 + installed} passed" in done.stdout, done.stdout[-3000:]
    assert installed or MISSING_REASON.split(";")[0] in done.stdout  # skipped with its reason
    db = sqlite3.connect(tmp_path / "fsbench.db")
    figures = dict(db.execute("SELECT c.workload, COUNT(*) FROM metrics m JOIN runs r ON m.run_id = r.id "
                              "JOIN cases c ON r.case_row = c.id WHERE m.value > 0 GROUP BY c.workload").fetchall())
    checked = {name for (name,) in db.execute("SELECT DISTINCT json_extract(params, '$.metric') FROM metrics "
                                              "WHERE name = 'disk.share'")}
    db.close()
    assert {"fio", "iozone", "dbench", "bonnie"} <= set(figures), figures
    assert {"fio.write.bw", "fio.read.bw", "iozone.write", "iozone.read", "bonnie.block_write"} <= checked, checked
    assert not qemu_of(str(tmp_path)) and not list((tmp_path / "images").glob("*.img"))


#: a case's line, read whole: its place, its time and the time left after it
CASE_LINE = re.compile(r"^\[(\d+)/(\d+)\] \S+ passed ([\d.]+) s: .*  (?:[\d:]+ spent, )?(?:about ([\d:]+) left|done)$")


def clock_seconds(text: str) -> int:
    """1:02:05 -> 3725."""
    return sum(int(part) * 60 ** power for power, part in enumerate(reversed(text.split(":"))))


def test_the_time_left_counts_the_guests_boot_once(tmp_path):
    """One virtual machine serves the session; its boot falls in the first case (issue 35: the
    time left was each guest case's time with the boot in it until several were done). After the
    first case the other two are expected to take what it took less the boot, not all of it."""
    reason = vm_unavailable()
    if reason:
        pytest.skip(reason)
    done = execute_pytest(["benchmarks/test_dd.py", "-k", "dd and write", "--kernel=vm", "--fs=xfs,ext4,btrfs",
                           "--runs=1", *small(tmp_path, "16M")], cwd=REPO, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:]
    cases = [found for line in done.stdout.splitlines() if (found := CASE_LINE.match(line))]
    assert [(int(c[1]), int(c[2])) for c in cases] == [(1, 3), (2, 3), (3, 3)], done.stdout[-3000:]
    boot = float(re.search(r"1 boot\(s\), the last took (\d+) s", done.stdout)[1])
    first, left = float(cases[0][3]), clock_seconds(cases[0][4])
    assert boot > 5 and left < 2 * (first - boot / 2), (first, boot, left)  # not 2 x first: the boot is not theirs
    assert not qemu_of(str(tmp_path)) and not list((tmp_path / "images").glob("*.img"))


def test_a_killed_sessions_guest_is_removed_by_fsbench_cleanup(tmp_path):
    reason = vm_unavailable()
    if reason:
        pytest.skip(reason)
    proc = start_session(["benchmarks/test_dd.py", "-k", "dd_write", "--kernel=vm", "--fs=xfs", "--layout=raid1",
                          "--runs=30", *small(tmp_path)], REPO)
    marker = f"/run/fsbench/{proc.pid}-"
    deadline = time.monotonic() + 300
    while not (list((tmp_path / "images").glob("*.img")) and qemu_of(marker)):
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "the guest never started"
        time.sleep(0.2)
    while sum(os.stat(image).st_blocks * 512 for image in (tmp_path / "images").glob("*.img")) < 8 << 20:
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline + 300, "the guest never wrote to its disks"
        time.sleep(0.2)  # booted, the case's array built and being written to: killed mid-case
    os.killpg(proc.pid, signal.SIGKILL)  # the session only: its guest runs in a group of its own
    proc.communicate(timeout=60)
    assert qemu_of(marker), "a killed session's guest is still there until fsbench cleanup"
    sweep()
    assert gone_soon(lambda: qemu_of(marker))
    assert not list((tmp_path / "images").glob("*.img"))
    assert not list(Path("/run/fsbench").glob(f"{proc.pid}-*"))


def test_devices_are_passed_through_to_the_virtual_machine(tmp_path, two_disks):
    reason = vm_unavailable()
    if reason:
        pytest.skip(reason)
    done = execute_pytest(["benchmarks/test_dd.py", "-k", "dd and write", "--kernel=vm", "--fs=xfs", "--layout=raid1",
                       f"--devices={','.join(two_disks)}", "--runs=2",
                       *[a for a in small(tmp_path, "16M") if not a.startswith("--image-size")]],  # devices: no images
                      cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed" in done.stdout, done.stdout[-3000:]
    assert not list((tmp_path / "images").glob("*.img"))  # the guest's disks were the devices, not images
    for device, image in zip(two_disks, sorted(tmp_path.glob("disk*.img"))):
        assert os.stat(image).st_blocks * 512 >= 16 << 20, "the case's writes did not reach the device"
        probe = subprocess.run(["blkid", "-p", device], capture_output=True, text=True)
        assert probe.returncode == 2, f"{device} still has a signature: {probe.stdout}"  # wiped, as on the host
    assert not qemu_of(str(tmp_path))
