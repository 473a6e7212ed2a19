"""Layout -> command mapping for every filesystem, including md RAID and ZFS on the OpenZFS kernel
module, which this machine cannot run; the integration tests run what it can."""

import dataclasses

import pytest

from pytest_fsbench.case import MOST_DEVICES, CaseSpec
from pytest_fsbench.filesystems import BuildContext, driver
from pytest_fsbench.filesystems.zfs import expand_values
from pytest_fsbench.system.host import Host

DEVS = ("/dev/loop0", "/dev/loop1", "/dev/loop2", "/dev/loop3")
CTX = BuildContext("fsbench-1-abcd-1", DEVS, "/run/fsbench/t/mnt/x", "/run/fsbench/t/dev/x")
HOST = Host("6.1.0", frozenset({"ext4", "xfs", "btrfs", "fuse"}),
            frozenset({"mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "btrfs", "mdadm", "zpool", "zfs", "zfs-fuse"}),
            has_md=True, zfs_module=True, is_root=True, ram_bytes=8 << 30)


def plan(spec: CaseSpec) -> list[str]:
    ctx = dataclasses.replace(CTX, devices=DEVS[: spec.devices_needed])
    return [" ".join(step.argv) for step in driver(spec.fs, HOST).plan(spec, ctx)]


@pytest.mark.parametrize("layout, level, n", [("raid0", "0", 2), ("raid1", "1", 2), ("raid10", "10", 4), ("raid5", "5", 3)])
@pytest.mark.parametrize("fs, mkfs", [
    ("ext4", "mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0"), ("xfs", "mkfs.xfs -f -q"),
])
def test_md_raid_under_ext4_and_xfs(fs, mkfs, layout, level, n):
    devs = " ".join(DEVS[:n])
    assert plan(CaseSpec(fs, layout)) == [
        f"mdadm --create /dev/md/fsbench-1-abcd-1 --run --assume-clean --metadata=1.2 --level={level} --raid-devices={n} {devs}",
        f"{mkfs} /dev/md/fsbench-1-abcd-1",
        f"mount -t {fs} /dev/md/fsbench-1-abcd-1 /run/fsbench/t/mnt/x",
    ]


def test_md_is_stopped_and_zeroed_on_teardown():
    spec = CaseSpec("ext4", "raid5")
    ctx = dataclasses.replace(CTX, devices=DEVS[:3])
    undo = driver("ext4").plan(spec, ctx)[0].undo
    assert [" ".join(a) for a in undo] == [
        "mdadm --stop /dev/md/fsbench-1-abcd-1", "mdadm --zero-superblock /dev/loop0 /dev/loop1 /dev/loop2"]


def test_single_disk_and_user_options_come_last():
    spec = CaseSpec("xfs", "single", (("mkfs", "-m crc=1"), ("mount", "noatime,nodiratime")))
    assert plan(spec) == ["mkfs.xfs -f -q -m crc=1 /dev/loop0",
                          "mount -t xfs -o noatime,nodiratime /dev/loop0 /run/fsbench/t/mnt/x"]


@pytest.mark.parametrize("layout", ["single", "raid0", "raid1", "raid10", "raid5"])
def test_btrfs_profiles(layout):
    spec = CaseSpec("btrfs", layout, (("compress", "zstd:3"), ("mount", "noatime")))
    devs = DEVS[: spec.devices_needed]
    assert plan(spec) == [
        f"mkfs.btrfs -f -L fsbench-1-abcd-1 -m {layout} -d {layout} {' '.join(devs)}",
        "mount -t btrfs -o " + ",".join(f"device={d}" for d in devs)
        + f",compress=zstd:3,noatime {devs[0]} /run/fsbench/t/mnt/x",
    ]


@pytest.mark.parametrize("layout, vdevs", [
    ("single", "/dev/loop0"),
    ("raid0", "/dev/loop0 /dev/loop1"),
    ("raid1", "mirror /dev/loop0 /dev/loop1"),
    ("raid10", "mirror /dev/loop0 /dev/loop1 mirror /dev/loop2 /dev/loop3"),
    ("raid5", "raidz1 /dev/loop0 /dev/loop1 /dev/loop2"),
])
def test_zfs_vdevs_and_properties(layout, vdevs):
    spec = CaseSpec("zfs", layout, (("compression", "lz4"), ("ashift", "12"), ("recordsize", "1M")))
    create = plan(spec)[-1]
    assert create == ("zpool create -f -o cachefile=none -O compression=lz4 -o ashift=12 -O recordsize=1M "
                      f"-m /run/fsbench/t/mnt/x fsbench-1-abcd-1 {vdevs}")


@pytest.mark.parametrize("layout, options, vdevs", [
    ("raid1", (("log", "mirror"), ("cache", "single")),
     "mirror /dev/loop0 /dev/loop1 log mirror /dev/loop2 /dev/loop3 cache /dev/loop4"),
    # the groups follow the layout's devices in one order (log, cache, special), whatever the options' order
    ("single", (("special", "mirror"), ("log", "single")), "/dev/loop0 log /dev/loop1 special mirror /dev/loop2 /dev/loop3"),
    ("raid5", (("special", "single"), ("log", "none"), ("cache", "none")),
     "raidz1 /dev/loop0 /dev/loop1 /dev/loop2 special /dev/loop3"),
    ("raid10", (("log", "mirror"), ("cache", "single"), ("special", "mirror")),
     ("mirror /dev/loop0 /dev/loop1 mirror /dev/loop2 /dev/loop3 log mirror /dev/loop4 /dev/loop5 cache /dev/loop6 "
      "special mirror /dev/loop7 /dev/loop8")),
])
def test_zfs_log_cache_and_special_vdevs_on_devices_of_their_own(layout, options, vdevs):
    spec = CaseSpec("zfs", layout, (("compression", "lz4"), *options))
    devices = tuple(f"/dev/loop{n}" for n in range(spec.devices_needed))
    create = driver("zfs", HOST).plan(spec, dataclasses.replace(CTX, devices=devices))[-1].argv
    # vdevs, never properties: no -O log=...
    assert " ".join(create).endswith(f"-O compression=lz4 -m /run/fsbench/t/mnt/x fsbench-1-abcd-1 {vdevs}")
    assert len(devices) == sum(word.startswith("/dev/") for word in vdevs.split())


def test_a_case_needs_its_layouts_devices_and_those_its_vdev_options_add():
    assert CaseSpec("zfs", "raid10").devices_needed == 4
    assert CaseSpec("zfs", "raid1", (("log", "mirror"), ("cache", "single"))).devices_needed == 5
    assert CaseSpec("zfs", "single", (("log", "none"), ("special", "single"))).devices_needed == 2
    assert CaseSpec("zfs", "raid10", (("log", "mirror"), ("cache", "single"), ("special", "mirror"))).devices_needed \
        == MOST_DEVICES == 9


def test_zfs_teardown_destroys_the_pool():
    undo = driver("zfs", HOST).plan(CaseSpec("zfs", "raid1"), dataclasses.replace(CTX, devices=DEVS[:2]))[-1].undo
    assert [" ".join(a) for a in undo] == ["zpool destroy fsbench-1-abcd-1"]


def test_zfs_cache_eviction_is_export_import():
    spec = CaseSpec("zfs", "single")
    assert [" ".join(a) for a in driver("zfs").evict_plan(spec, CTX)] == [
        "zpool export fsbench-1-abcd-1",
        "zpool import -o cachefile=none -d /run/fsbench/t/dev/x fsbench-1-abcd-1",
    ]


def test_kernel_fs_cache_eviction_is_umount_mount():
    spec = CaseSpec("ext4", "single", (("mount", "noatime"),))
    assert [" ".join(a) for a in driver("ext4").evict_plan(spec, CTX)] == [
        "umount /run/fsbench/t/mnt/x", "mount -t ext4 -o noatime /dev/loop0 /run/fsbench/t/mnt/x"]


def test_zfs_implementation_follows_the_host():
    assert driver("zfs", HOST).impl == "openzfs"
    fuse_host = dataclasses.replace(HOST, zfs_module=False)
    assert fuse_host.zfs_impl == "zfs-fuse"
    assert driver("zfs", fuse_host).impl == "zfs-fuse"
    assert dataclasses.replace(fuse_host, programs=frozenset({"zpool"})).zfs_impl is None


# --- why a case cannot run: each reason is the real one -------------------------------------

def reasons(spec: CaseSpec, host: Host) -> list[str]:
    return driver(spec.fs, host).unavailable(spec, host)


def test_everything_runs_on_a_complete_host():
    for fs in ("ext4", "xfs", "btrfs", "zfs"):
        for layout in ("single", "raid0", "raid1", "raid10", "raid5"):
            assert reasons(CaseSpec(fs, layout), HOST) == []


def test_no_md_driver(monkeypatch):
    monkeypatch.setattr("pytest_fsbench.filesystems.base.uml_installed", lambda: True)
    host = dataclasses.replace(HOST, has_md=False)
    assert reasons(CaseSpec("xfs", "raid10"), host) == [
        "xfs raid10 needs an md RAID array, and this kernel has no md driver (/proc/mdstat is absent); "
        "run it in a guest kernel with --kernel=host+uml (or --kernel=uml)"]
    assert reasons(CaseSpec("xfs", "single"), host) == []


def test_no_md_driver_says_how_to_get_a_guest_kernel(monkeypatch):
    monkeypatch.setattr("pytest_fsbench.filesystems.base.uml_installed", lambda: False)
    host = dataclasses.replace(HOST, has_md=False)
    [reason] = reasons(CaseSpec("ext4", "raid1"), host)
    assert reason.endswith("; install user-mode-linux (Debian package) to run it in a guest kernel with "
                           "--kernel=host+uml")
    [in_guest] = reasons(CaseSpec("ext4", "raid1", kernel="uml-custom"), host)
    assert "--kernel" not in in_guest and in_guest.endswith("give a guest kernel built with md (CONFIG_BLK_DEV_MD "
                                                           "and its RAID levels)")


def test_missing_tools_and_kernel_support(monkeypatch):
    monkeypatch.setattr("pytest_fsbench.filesystems.base.uml_installed", lambda: True)
    host = dataclasses.replace(HOST, programs=HOST.programs - {"mkfs.btrfs"}, filesystems=HOST.filesystems - {"btrfs"})
    assert reasons(CaseSpec("btrfs", "single"), host) == [
        "this kernel has no btrfs filesystem (/proc/filesystems); run it in a guest kernel with --kernel=host+uml "
        "(or --kernel=uml)",
        "mkfs.btrfs is not installed (Debian package btrfs-progs)",
    ]


def test_a_kernel_lacking_the_filesystem_and_md_gets_one_remedy(monkeypatch):
    monkeypatch.setattr("pytest_fsbench.filesystems.base.uml_installed", lambda: True)
    host = dataclasses.replace(HOST, has_md=False, filesystems=HOST.filesystems - {"jfs"},
                               programs=HOST.programs | {"mkfs.jfs"})
    assert reasons(CaseSpec("jfs", "raid1"), host) == [
        "this kernel has no jfs filesystem (/proc/filesystems); jfs raid1 needs an md RAID array, and this kernel "
        "has no md driver (/proc/mdstat is absent); run it in a guest kernel with --kernel=host+uml (or --kernel=uml)"]
    [in_guest] = reasons(CaseSpec("jfs", "raid1", kernel="uml"), host)
    assert in_guest.endswith("; give a guest kernel built with jfs and md (CONFIG_BLK_DEV_MD and its RAID levels)")


def test_not_root():
    assert reasons(CaseSpec("ext4", "single"), dataclasses.replace(HOST, is_root=False)) == [
        "building filesystems needs root (losetup, mkfs, mount); run as root"]


def test_zfs_fuse_limits():
    host = dataclasses.replace(HOST, zfs_module=False)
    assert reasons(CaseSpec("zfs", "single", (("compression", "lz4"),)), host) == [
        "zfs-fuse (pool version 23) has no compression=lz4; it knows on, off, lzjb, gzip, gzip-1..9 and zle "
        "(run it on OpenZFS in a virtual machine with --kernel=host+vm (or --kernel=vm))"]
    assert reasons(CaseSpec("zfs", "single", (("recordsize", "1M"),)), host) == [
        "zfs-fuse supports recordsize up to 128K, not 1M (run it on OpenZFS in a virtual machine with "
        "--kernel=host+vm (or --kernel=vm))"]
    assert reasons(CaseSpec("zfs", "single", (("ashift", "14"),)), host)[0].startswith(
        "zfs-fuse supports ashift up to 13, not 14 (run it on OpenZFS")
    assert reasons(CaseSpec("zfs", "single", (("compression", "gzip-9"), ("recordsize", "128K"))), host) == []
    # the same options are fine on the kernel module
    assert reasons(CaseSpec("zfs", "single", (("compression", "lz4"), ("recordsize", "1M"))), HOST) == []


def test_zfs_fuse_has_log_and_cache_vdevs_but_no_special():
    host = dataclasses.replace(HOST, zfs_module=False)
    assert reasons(CaseSpec("zfs", "raid1", (("log", "mirror"), ("cache", "single"))), host) == []
    assert reasons(CaseSpec("zfs", "single", (("special", "none"),)), host) == []
    assert reasons(CaseSpec("zfs", "single", (("special", "mirror"),)), host) == [
        ("zfs-fuse (pool version 23) has no special vdevs (special=mirror); they are OpenZFS's (0.8 on) (run it on "
         "OpenZFS in a virtual machine with --kernel=host+vm (or --kernel=vm))")]


#: the OpenZFS 2.1.11 module's own lists (/sys/module/zfs/properties.dataset/*/values in Debian 12's)
OPENZFS_2_1 = dataclasses.replace(HOST, openzfs="2.1.11-1+deb12u1", openzfs_values=(
    ("checksum", "on | off | fletcher2 | fletcher4 | sha256 | sha512 | skein | edonr"),
    ("compression", ("on | off | lzjb | gzip | gzip-[1-9] | zle | lz4 | zstd | zstd-[1-19] | zstd-fast | "
                     "zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]")),
    ("dedup", "on | off | verify | sha256[,verify] | sha512[,verify] | skein[,verify] | edonr,verify"),
    ("recordsize", "512 to 1M, power of 2"),
    ("xattr", "on | off | dir | sa"),
))


def test_the_module_lists_its_values_with_ranges_and_optional_suffixes():
    listed = dict(OPENZFS_2_1.openzfs_values)
    compression = expand_values(listed["compression"])
    assert {"gzip-1", "gzip-9", "zstd-19", "zstd-fast", "zstd-fast-10", "zstd-fast-20", "zstd-fast-1000"} <= compression
    assert not {"gzip-10", "zstd-20", "zstd-fast-11", "zstd-fast-200"} & compression
    assert expand_values(listed["dedup"]) == {"on", "off", "verify", "sha256", "sha256,verify", "sha512",
                                              "sha512,verify", "skein", "skein,verify", "edonr,verify"}


@pytest.mark.parametrize("options, why", [
    ((("checksum", "blake3"),), ("checksum=blake3 needs OpenZFS 2.2; the guest's is 2.1.11 (its checksum values: on | "
                                 "off | fletcher2 | fletcher4 | sha256 | sha512 | skein | edonr)")),
    ((("dedup", "blake3,verify"),), "dedup=blake3,verify needs OpenZFS 2.2; the guest's is 2.1.11"),
    ((("dedup", "edonr"),), "the guest's OpenZFS 2.1.11 has no dedup=edonr (its dedup values: "),
])
def test_a_value_the_guests_openzfs_does_not_list_skips_naming_it_and_the_version(options, why):
    [reason] = reasons(CaseSpec("zfs", "single", options, kernel="vm"), OPENZFS_2_1)
    assert reason.startswith(why)


def test_values_the_guests_openzfs_lists_run_and_described_ones_are_the_tools_to_judge():
    options = (("compression", "zstd-fast-1000"), ("checksum", "edonr"), ("dedup", "skein,verify"),
               ("recordsize", "16M"), ("xattr", "sa"))
    assert reasons(CaseSpec("zfs", "raid5", options, kernel="vm"), OPENZFS_2_1) == []
    # this host's own module: the same decision, said of this host
    [reason] = reasons(CaseSpec("zfs", "single", (("checksum", "blake3"),)), OPENZFS_2_1)
    assert reason.startswith("checksum=blake3 needs OpenZFS 2.2; this host's is 2.1.11")
    # a module that lists nothing (before OpenZFS 0.8): the tool judges, as before
    assert reasons(CaseSpec("zfs", "single", (("checksum", "blake3"),)), HOST) == []


def test_no_zfs_at_all():
    host = dataclasses.replace(HOST, zfs_module=False, programs=HOST.programs - {"zfs-fuse"})
    assert reasons(CaseSpec("zfs", "single"), host)[-1].startswith("no ZFS here")


def test_a_session_ends_interrupted_complete_failed_or_empty():
    from pytest_fsbench.session import ending

    assert ending(True, True, 0) == "interrupted"
    assert ending(False, True, 3) == "complete"
    assert ending(False, False, 2) == "failed"
    assert ending(False, False, 0) == "empty"


def test_resume_takes_only_an_interrupted_session_with_the_same_cases():
    from pytest_fsbench.session import resume_problem

    argv = ["benchmarks/test_dd.py", "--fs=ext4", "--dd-size=16M"]
    assert resume_problem(3, "interrupted", False, argv, [*argv, "--resume=3", "-q", "--report=r.html"]) is None
    assert resume_problem(3, "running", False, argv, [*argv, "--resume"]) is None
    assert "session 3 is still running" in resume_problem(3, "running", True, argv, argv)
    assert "session 3 is complete; only an interrupted session" in resume_problem(3, "complete", False, argv, argv)
    assert "session 3 is empty" in resume_problem(3, "empty", False, argv, argv)
    problem = resume_problem(3, "interrupted", False, argv,
                             ["benchmarks/test_dd.py", "--fs=btrfs", "--dd-size=32M", "--resume=3"])
    assert problem == ("--resume=3: session 3 ran with --dd-size=16M --fs=ext4 benchmarks/test_dd.py; this command "
                       "drops --dd-size=16M --fs=ext4; adds --dd-size=32M --fs=btrfs: resume with the same cases and "
                       "options")
