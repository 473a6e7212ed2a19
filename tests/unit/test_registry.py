"""The registries: filesystems and workloads are found from their modules, in a stable order,
with what the rest of fsbench reads from them."""

import types

import pytest

from pytest_fsbench.case import CaseSpec
from pytest_fsbench.filesystems import DRIVERS, FILESYSTEMS, TOOLS, driver
from pytest_fsbench.host import Host
from pytest_fsbench.workloads import KNOWN_METRICS, PARAMS, WORKLOAD_MODULES, _params
from pytest_fsbench.workloads.params import Param, positive


def host(**changes) -> Host:
    facts = dict(kernel="6.1", filesystems=frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "fuse"}),
                 programs=frozenset(TOOLS) | {"zfs-fuse"}, has_md=False, zfs_module=False, is_root=True,
                 ram_bytes=8 << 30)
    facts.update(changes)
    return Host(**facts)


def test_filesystems_in_rank_order_with_their_tools():
    assert FILESYSTEMS == ("ext4", "xfs", "btrfs", "zfs", "ext2", "ext3", "jfs", "reiserfs")
    assert {"mkfs.ext2", "mkfs.ext3", "mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "zpool", "mkfs.jfs",
            "mkfs.reiserfs"} <= TOOLS
    assert all(DRIVERS[name].name == name for name in FILESYSTEMS)


def test_a_driver_as_the_host_runs_it():
    assert driver("zfs", host()).impl == "zfs-fuse"
    assert driver("zfs", host(zfs_module=True)).impl == "openzfs"
    assert driver("zfs").impl == "openzfs"
    assert driver("zfs").evict_on_every_run and driver("zfs").evict_description == "pool export/import"
    assert not driver("ext4").evict_on_every_run and driver("ext4").evict_description == "umount/mount"


def test_a_layout_the_driver_does_not_build_is_a_skip_reason():
    class Single(DRIVERS["ext2"]):
        layouts = frozenset({"single"})

    reasons = Single().unavailable(CaseSpec("ext2", "raid0"), host())
    assert reasons[0] == "ext2 does not build the raid0 layout (it builds single)"
    assert Single().unavailable(CaseSpec("ext2", "single"), host()) == []


def test_workloads_found_with_metrics_and_parameters():
    names = {module.__name__.rsplit(".", 1)[1] for module in WORKLOAD_MODULES}
    assert names == {"bonnie", "dbench", "dd", "filebench", "fio", "iozone", "kernel_build"}
    assert len({p.name for p in PARAMS}) == len(PARAMS)
    assert any(spec.matches("iozone.write") for spec in KNOWN_METRICS)


def test_a_parameter_two_workloads_declare_is_an_error():
    one = types.ModuleType("pytest_fsbench.workloads.one")
    two = types.ModuleType("pytest_fsbench.workloads.two")
    one.PARAMS = two.PARAMS = (Param("x-size", "1", "a size", positive),)
    with pytest.raises(RuntimeError, match="--x-size is declared by pytest_fsbench.workloads.one and "
                                           "pytest_fsbench.workloads.two"):
        _params((one, two))


def test_a_workload_says_why_it_cannot_run_beyond_missing_packages(monkeypatch):
    from pytest_fsbench.workloads import filebench, missing_tools

    monkeypatch.setattr(filebench, "find_filebench", lambda: None)
    assert missing_tools(["filebench_personality"], which=lambda _: "/bin/x") == [filebench.MISSING_REASON]
    assert missing_tools(["dd_bs"], which=lambda _: None) == ["dd is not installed (Debian package coreutils)"]


def test_doctor_lists_every_workload_with_what_it_lacks(monkeypatch):
    from pytest_fsbench import cli
    from pytest_fsbench.workloads import filebench

    monkeypatch.setattr(filebench, "find_filebench", lambda: None)
    lines = cli.doctor_lines(host())
    rows = lines[lines.index("workloads:") + 1:lines.index("options (--fs-opt FS:KEY=VALUE):")]
    assert [row.split()[0] for row in rows] == [m.__name__.rsplit(".", 1)[1] for m in WORKLOAD_MODULES]
    assert f"filebench      skip: {filebench.MISSING_REASON}" in [row.strip() for row in rows]


def test_only_a_compressing_case_is_asked_for_its_ratio_after_each_run():
    from pytest_fsbench.filesystems import BuildContext

    ctx = BuildContext("fsbench-1-abcd-1", ("/dev/loop0",), "/mnt/t", "/tmp/dev")
    assert driver("btrfs").compression_argv(CaseSpec("btrfs", "single"), ctx) is None
    assert driver("btrfs").compression_argv(CaseSpec("btrfs", "single", (("compress", "no"),)), ctx) is None
    assert driver("btrfs").compression_argv(CaseSpec("btrfs", "single", (("compress", "zstd"),)), ctx)[0] == "compsize"
    assert driver("btrfs").compression_argv(CaseSpec("btrfs", "single", (("mount", "compress=lzo"),)), ctx)
    assert driver("zfs").compression_argv(CaseSpec("zfs", "single"), ctx) is None
    assert driver("zfs").compression_argv(CaseSpec("zfs", "single", (("compression", "off"),)), ctx) is None
    assert driver("zfs").compression_argv(CaseSpec("zfs", "single", (("compression", "gzip"),)), ctx)[-1] == ctx.name
    assert driver("ext4").compression_argv(CaseSpec("ext4", "single"), ctx) is None
