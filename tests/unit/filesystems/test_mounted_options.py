"""The options stored with a case are those the kernel applied, read back from real findmnt and
zfs get outputs (issue 34: btrfs compress=zstd ran as zstd:3 and was stored as asked)."""

from __future__ import annotations

from pathlib import Path

from pytest_fsbench.filesystems.base import mounted_options

DATA = Path(__file__).resolve().parents[2] / "data"


def read(name: str) -> str:
    return (DATA / name).read_text().strip()  # as describe() keeps a command's output


def test_btrfs_compress_is_stored_as_the_kernel_mounted_it():
    applied = {"mount": read("findmnt/btrfs-compress-zstd.txt")}
    assert mounted_options((("compress", "zstd"), ("mount", "noatime")), applied) == {
        "compress": "zstd:3", "mount": "noatime"}


def test_compress_force_and_a_mount_option_of_its_own():
    applied = {"mount": read("findmnt/btrfs-compress-force-lzo.txt")}
    assert mounted_options((("compress-force", "lzo"), ("mount", "nodatasum")), applied) == {
        "compress-force": "lzo", "mount": "nodatasum"}


def test_a_mount_list_item_by_item_and_what_the_kernel_does_not_show_as_asked():
    applied = {"mount": read("findmnt/ext4-writeback.txt")}
    assert mounted_options((("mount", "noatime,data=writeback,commit=30,nodiscard"), ("mkfs", "-E nodiscard")),
                           applied) == {"mount": "noatime,data=writeback,commit=30,nodiscard", "mkfs": "-E nodiscard"}
    applied = {"mount": read("findmnt/xfs-logbufs.txt")}
    assert mounted_options((("mount", "logbufs=8,logbsize=32768"),), applied) == {
        "mount": "logbufs=8,logbsize=32k"}


def test_zfs_properties_from_zfs_get():
    applied = {"properties": read("zfs/get-recordsize-64K-gzip.txt"), "pool": "pool: x"}
    assert mounted_options((("recordsize", "64K"), ("compression", "gzip"), ("ashift", "12")), applied) == {
        "recordsize": "64K", "compression": "gzip", "ashift": "12"}


def test_nothing_read_is_no_record():
    assert mounted_options((("compress", "zstd"),), {"mount": "unavailable: findmnt: exit status 1"}) is None
    assert mounted_options((("recordsize", "64K"),), {}) is None


def test_an_option_the_kernel_turned_off_and_what_it_brought_are_stored_as_the_kernel_shows_them():
    """Issue 44: ext4 mount=data=journal,dioread_nolock ran as nodioread_nolock,nodelalloc,data=journal
    and was stored as asked."""
    applied = {"mount": read("findmnt/ext4-data-journal-dioread-nolock.txt")}
    assert mounted_options((("mount", "data=journal,dioread_nolock"),), applied, non_defaults=True) == {
        "mount": "data=journal,nodioread_nolock,nodelalloc"}
    # a filesystem that shows its defaults too: what it brought cannot be told from them, the asked as applied
    assert mounted_options((("mount", "data=journal,dioread_nolock"),), applied) == {
        "mount": "data=journal,nodioread_nolock"}
