import dataclasses

import pytest

from pytest_fsbench.case import CaseSpec
from pytest_fsbench.errors import UsageError
from pytest_fsbench.filesystems import FILESYSTEMS, TOOLS
from pytest_fsbench.system.host import Host
from pytest_fsbench.kernels.kernel import DEBIAN_UML, Kernel
from pytest_fsbench.matrix import (
    build_pairs,
    build_matrix, needs_guest, parse_device_list, parse_filesystems, parse_fs_opt, parse_image_size, parse_layouts,
    place_cases,
)

#: a host like this machine: every tool, zfs-fuse, ext4/xfs/btrfs in its kernel, no md driver
NO_MD = Host("6.1.0", frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "fuse"}),
             frozenset(TOOLS) | {"zfs-fuse", "mdadm"}, has_md=False, zfs_module=False, is_root=True, ram_bytes=8 << 30)
UML = Kernel("uml", DEBIAN_UML, fallback=True)
VM = Kernel("vm", DEBIAN_UML.with_name("vmlinuz"), fallback=True, vm=True)


def opts(*texts: str) -> list[tuple[str, str, str]]:
    return [parse_fs_opt(text) for text in texts]


def test_filesystems_in_order_and_a_repeat_is_refused():
    assert parse_filesystems("zfs,btrfs") == ("zfs", "btrfs")
    with pytest.raises(UsageError, match="--fs=zfs,btrfs,zfs: 'zfs' is listed twice; name each value once"):
        parse_filesystems("zfs,btrfs,zfs")


@pytest.mark.parametrize("text, message", [
    ("ntfs", f"unknown filesystem 'ntfs'; choose from {', '.join(FILESYSTEMS)}"),
    ("ext4,,xfs", f"give a comma-separated list of one or more of {', '.join(FILESYSTEMS)}"),
    ("", "give a comma-separated list"),
])
def test_bad_filesystem(text, message):
    with pytest.raises(UsageError, match=message):
        parse_filesystems(text)


@pytest.mark.parametrize("text", ["raid6", "mirror", "single,"])
def test_bad_layout(text):
    with pytest.raises(UsageError, match="--layout"):
        parse_layouts(text)


def test_fs_opt_parsed():
    assert parse_fs_opt("btrfs:compress=zstd") == ("btrfs", "compress", "zstd")
    assert parse_fs_opt("xfs:mkfs=-m crc=1") == ("xfs", "mkfs", "-m crc=1")
    assert parse_fs_opt("zfs:recordsize=64K") == ("zfs", "recordsize", "64K")
    assert parse_fs_opt("ext4:mount=noatime,nodiratime") == ("ext4", "mount", "noatime,nodiratime")


@pytest.mark.parametrize("text, message", [
    ("btrfs-compress=zstd", "expected FS:KEY=VALUE"),
    ("btrfs:compress", "expected FS:KEY=VALUE"),
    ("btrfs:compress=", "expected FS:KEY=VALUE"),
    ("reiser:mount=noatime", "unknown filesystem 'reiser'"),
    ("ext4:compress=zstd", "ext4 has no option 'compress'; its options are: mkfs, mount"),
    ("btrfs:compress=lz4", "compress must be zlib"),
    ("zfs:recordsize=100K", "recordsize must be a power of two"),
    ("zfs:recordsize=32M", "recordsize must be a power of two from 512 to 16M"),
    ("zfs:recordsize=big", "is not a size"),
    ("zfs:ashift=20", "ashift must be a number from 9 to 16"),
    ("zfs:compression=brotli", "compression must be on, off"),
    ("zfs:dedup=maybe", "dedup must be one of on, off"),
    ("zfs:compression=zstd-fast-11", "compression must be on, off"),
    ("zfs:log=raidz1", "zfs:log=raidz1: log must be one of none, single, mirror"),
    ("zfs:cache=mirror", "zfs:cache=mirror: cache must be one of none, single"),
    ("zfs:special=/dev/sdd1", "special must be one of none, single, mirror"),
    ("xfs:mkfs=-m 'crc=1", "mkfs is not a valid argument list"),
    ("ext4:mount=noatime,,", "mount must be a comma-separated list"),
])
def test_bad_fs_opt_is_one_line(text, message):
    with pytest.raises(UsageError, match=message) as info:
        parse_fs_opt(text)
    assert "\n" not in str(info.value)


def test_option_for_filesystem_not_selected():
    with pytest.raises(UsageError, match="is for zfs, which --fs does not include"):
        build_matrix(("ext4",), ("single",), opts("zfs:compression=gzip"))


def test_matrix_is_fs_by_variant_by_layout():
    specs = build_matrix(("btrfs", "zfs"), ("single", "raid10"),
                         opts("zfs:compression=off", "zfs:compression=gzip", "zfs:recordsize=64K"))
    assert [s.id for s in specs] == [
        "btrfs-single", "btrfs-raid10",
        "zfs-single-compression=off", "zfs-raid10-compression=off",
        "zfs-single-compression=gzip", "zfs-raid10-compression=gzip",
    ]
    # the option common to every zfs case is applied, recorded, and left out of the id
    assert all(dict(s.options)["recordsize"] == "64K" for s in specs if s.fs == "zfs")
    assert specs[2].options_text() == "compression=off,recordsize=64K"


def test_log_and_cache_with_and_without_are_cases_of_their_own():
    specs = build_matrix(("zfs",), ("raid1",), opts("zfs:log=none", "zfs:log=single", "zfs:cache=single"))
    assert [(s.id, s.devices_needed) for s in specs] == [("zfs-raid1-log=none", 3), ("zfs-raid1-log=single", 4)]


def test_a_single_option_keeps_the_case_id():
    [spec] = build_matrix(("ext4",), ("single",), opts("ext4:mount=sync"))
    assert spec.id == "ext4-single" and spec.option("mount") == "sync"
    assert spec.to_dict()["options"] == {"mount": "sync"}


def test_case_id_has_no_spaces():
    assert CaseSpec("xfs", "single", (("mkfs", "-m crc=1"),)).id == "xfs-single-mkfs=-m_crc=1"
    specs = build_matrix(("xfs",), ("single",), opts("xfs:mkfs=-m crc=1", "xfs:mkfs=-m crc=0"))
    assert [s.id for s in specs] == ["xfs-single-mkfs=-m_crc=1", "xfs-single-mkfs=-m_crc=0"]


def test_devices():
    assert parse_device_list("/dev/sdb, /dev/sdc") == ("/dev/sdb", "/dev/sdc")
    with pytest.raises(UsageError, match="listed twice"):
        parse_device_list("/dev/sdb,/dev/sdb")
    with pytest.raises(UsageError, match="comma-separated list of block devices"):
        parse_device_list("/dev/sdb,")


def test_image_size():
    assert parse_image_size("2G") == 2 << 30
    with pytest.raises(UsageError, match="at least 512M"):
        parse_image_size("100M")
    with pytest.raises(UsageError, match="is not a size"):
        parse_image_size("2 gigs")


def test_paired_variant_replaces_the_option_it_names():
    specs = build_matrix(("btrfs", "ext4"), ("single",), opts("btrfs:compress=no"))
    pairs = build_pairs(specs, opts("btrfs:compress-force=zstd:15"))
    [(reference, variant)] = pairs
    assert reference.options == (("compress", "no"),)
    assert variant.options == (("compress-force", "zstd:15"),)  # compress-force replaces compress
    assert reference.id == "btrfs-single-compress=no" and variant.id == "btrfs-single-compress-force=zstd:15"
    [(a, b)] = build_pairs(build_matrix(("ext4",), ("single",), []), opts("ext4:mount=noatime"))
    assert (a.id, b.id) == ("ext4-single", "ext4-single-mount=noatime")


def test_paired_errors():
    specs = build_matrix(("btrfs",), ("single",), opts("btrfs:compress=zstd"))
    with pytest.raises(UsageError, match="--paired btrfs:compress=zstd: the same options as the case"):
        build_pairs(specs, opts("btrfs:compress=zstd"))
    with pytest.raises(UsageError, match="--paired xfs:mount=noatime is for xfs, which --fs does not include"):
        build_pairs(specs, opts("xfs:mount=noatime"))
    with pytest.raises(UsageError, match="give each option \\(or its alternative\\) once"):
        build_pairs(specs, opts("btrfs:compress=lzo", "btrfs:compress-force=zstd"))
    two = build_matrix(("btrfs",), ("single",), opts("btrfs:compress=zstd", "btrfs:compress=no"))
    with pytest.raises(UsageError, match="--paired makes the same variant \\(compress=lzo\\) of"):
        build_pairs(two, opts("btrfs:compress=lzo"))


@pytest.mark.parametrize("fs, layout, host, guest", [
    ("ext4", "raid1", NO_MD, True),  # md: only a guest kernel has it
    ("xfs", "raid10", NO_MD, True),
    ("ext4", "single", NO_MD, False),
    ("btrfs", "raid5", NO_MD, False),  # btrfs builds its own RAID
    ("zfs", "raid10", NO_MD, False),  # zfs-fuse on the host
    ("jfs", "single", NO_MD, True),  # a filesystem the host's kernel lacks
    ("ext4", "raid1", dataclasses.replace(NO_MD, has_md=True), False),
    ("ext4", "raid1", dataclasses.replace(NO_MD, programs=NO_MD.programs - {"mdadm"}), False),  # nor in a guest
    ("ext4", "raid1", dataclasses.replace(NO_MD, is_root=False), False),
    ("zfs", "single", dataclasses.replace(NO_MD, programs=NO_MD.programs - {"zfs-fuse"}), False),
])
def test_a_case_needs_the_guest_only_for_what_a_guest_kernel_brings(fs, layout, host, guest):
    assert needs_guest(CaseSpec(fs, layout), host, UML) is guest
    if fs != "zfs":  # a virtual machine brings them too (and OpenZFS: below)
        assert needs_guest(CaseSpec(fs, layout), host, VM) is guest


@pytest.mark.parametrize("options, guest", [
    ((("compression", "lz4"),), True),  # zfs-fuse has none of these; OpenZFS in the guest has them all
    ((("compression", "zstd-3"),), True),
    ((("recordsize", "1M"),), True),
    ((("ashift", "14"),), True),
    ((("compression", "lzjb"), ("recordsize", "128K"), ("ashift", "13"), ("dedup", "on")), False),  # zfs-fuse can
    ((), False),
])
def test_a_zfs_case_needs_a_virtual_machine_for_what_zfs_fuse_cannot_express(options, guest):
    spec = CaseSpec("zfs", "single", options)
    assert needs_guest(spec, NO_MD, VM) is guest
    assert not needs_guest(spec, NO_MD, UML)  # ZFS never runs in a UML kernel: it stays, and skips, on the host


def test_zfs_options_the_hosts_openzfs_module_has_stay_on_the_host():
    openzfs = dataclasses.replace(NO_MD, zfs_module=True)
    assert not needs_guest(CaseSpec("zfs", "single", (("compression", "lz4"),)), openzfs, VM)


def test_without_zfs_fuse_on_the_host_the_virtual_machines_openzfs_runs_zfs():
    for lacking in ({"zfs-fuse"}, {"zfs-fuse", "zpool", "zfs"}):  # the guest's userland is OpenZFS's own
        no_zfs = dataclasses.replace(NO_MD, programs=NO_MD.programs - lacking)
        assert needs_guest(CaseSpec("zfs", "single"), no_zfs, VM)


def test_a_virtual_machine_takes_the_cases_its_cases_are_compared_with():
    """The lz4 case must run in the guest; its compression=off sibling (same fs and layout) goes
    with it, so the two compare with each other; other layouts and filesystems stay."""
    specs = build_matrix(("zfs", "btrfs"), ("single", "raid1"),
                         opts("zfs:compression=lz4", "zfs:compression=off", "btrfs:compress=lzo"))
    specs = [s for s in specs if not (s.layout == "raid1" and s.option("compression") == "lz4")]
    placed = place_cases(specs, VM, NO_MD)
    assert [s.id for s in placed] == ["vm-zfs-single-compression=lz4", "vm-zfs-single-compression=off",
                                      "zfs-raid1-compression=off", "btrfs-single", "btrfs-raid1"]
    assert [dataclasses.replace(s, kernel="host") for s in placed] == specs


def test_a_uml_guest_takes_only_the_cases_that_need_it():
    specs = build_matrix(("ext4",), ("single", "raid1"), opts("ext4:mount=noatime", "ext4:mount=relatime"))
    assert [s.id for s in place_cases(specs, UML, NO_MD)] == [
        "ext4-single-mount=noatime", "uml-ext4-raid1-mount=noatime", "ext4-single-mount=relatime",
        "uml-ext4-raid1-mount=relatime"]
    assert [s.id for s in place_cases(specs, VM, NO_MD)] == [  # md: both raid1 cases must go, single ones stay
        "ext4-single-mount=noatime", "vm-ext4-raid1-mount=noatime", "ext4-single-mount=relatime",
        "vm-ext4-raid1-mount=relatime"]


def test_placed_cases_keep_their_order_and_options():
    specs = build_matrix(("ext4", "btrfs"), ("single", "raid5"), opts("ext4:mount=noatime", "ext4:mount=relatime"))
    placed = place_cases(specs, UML, NO_MD)
    assert [s.id for s in placed] == ["ext4-single-mount=noatime", "uml-ext4-raid5-mount=noatime",
                                      "ext4-single-mount=relatime", "uml-ext4-raid5-mount=relatime",
                                      "btrfs-single", "btrfs-raid5"]
    assert [dataclasses.replace(s, kernel="host") for s in placed] == specs
