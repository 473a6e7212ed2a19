"""The registries: filesystems and workloads are found from their modules, in a stable order,
with what the rest of fsbench reads from them. What is expected of the filesystems is read from
their driver modules, so a new filesystem needs no line here."""

import importlib
import pkgutil
import types

import pytest

from pytest_fsbench import filesystems
from pytest_fsbench.kernels import guest_agent
from pytest_fsbench.case import CaseSpec
from pytest_fsbench.filesystems import DRIVERS, FILESYSTEMS, GUEST_FILESYSTEMS, TOOLS, Filesystem, driver
from pytest_fsbench.system.host import Host
from pytest_fsbench.system.commands import Completed
from pytest_fsbench.workloads import KNOWN_METRICS, PARAMS, WORKLOAD_MODULES, _params
from pytest_fsbench.workloads.params import Param, positive


def declared() -> list[type[Filesystem]]:
    """The driver classes the filesystems package's modules define (each with a name), read from
    the modules themselves rather than from the registry."""
    found = []
    for info in pkgutil.iter_modules(filesystems.__path__):
        module = importlib.import_module(f"{filesystems.__name__}.{info.name}")
        found += [cls for cls in vars(module).values() if isinstance(cls, type) and issubclass(cls, Filesystem)
                  and cls.__module__ == module.__name__ and "name" in vars(cls)]
    return found


def host(**changes) -> Host:
    kernel = frozenset(cls.kernel_name for cls in DRIVERS.values() if cls.kernel_name)
    facts = dict(kernel="6.1", filesystems=kernel | {"fuse"}, programs=frozenset(TOOLS) | {"zfs-fuse"},
                 has_md=False, zfs_module=False, is_root=True, ram_bytes=8 << 30)
    facts.update(changes)
    return Host(**facts)


def test_every_driver_module_adds_its_filesystem_in_rank_order():
    drivers = declared()
    assert FILESYSTEMS == tuple(cls.name for cls in sorted(drivers, key=lambda cls: (cls.rank, cls.name)))
    assert FILESYSTEMS[:4] == ("ext4", "xfs", "btrfs", "zfs")  # the four every study compares come first
    assert all(DRIVERS[cls.name] is cls for cls in drivers)


def test_the_host_probe_looks_for_every_program_a_driver_declares(monkeypatch, tmp_path):
    from pytest_fsbench.kernels import probe

    (tmp_path / "filesystems").write_text("nodev\tproc\n\text4\nnodev\tfuse\n")
    monkeypatch.setattr(probe.shutil, "which", lambda program: f"/usr/bin/{program}")
    host = probe.probe(proc=tmp_path, sys=tmp_path)
    assert host.filesystems == {"proc", "ext4", "fuse"} and not host.has_md and not host.zfs_module
    declared_programs = {program for cls in declared()
                         for program in (*cls.tools, *cls.layout_tools, *(d.program for d in cls.daemons))}
    assert host.programs == set(probe.PROGRAMS) | declared_programs
    assert {"mdadm", "zfs-fuse"} <= declared_programs  # md's for the raid layouts, ZFS's daemon
    assert all(package for cls in declared() for package in (*cls.tools.values(), *cls.layout_tools.values()))


def test_the_probe_reads_the_openzfs_modules_version_and_its_lists_of_values(tmp_path):
    from pytest_fsbench.kernels import probe

    (tmp_path / "filesystems").write_text("nodev\tproc\n")
    assert probe.probe(proc=tmp_path, sys=tmp_path).openzfs is None
    zfs = tmp_path / "module" / "zfs"
    for prop, values in (("checksum", "on | off | sha256\n"), ("recordsize", "512 to 1M, power of 2\n")):
        (zfs / "properties.dataset" / prop).mkdir(parents=True)
        (zfs / "properties.dataset" / prop / "values").write_text(values)
    (zfs / "properties.dataset" / "name").mkdir()  # a property without a list of values
    (zfs / "version").write_text("2.1.11-1+deb12u1\n")
    found = probe.probe(proc=tmp_path, sys=tmp_path)
    assert found.zfs_module and found.openzfs == "2.1.11-1+deb12u1"
    assert found.openzfs_values == (("checksum", "on | off | sha256"), ("recordsize", "512 to 1M, power of 2"))


def test_a_guest_loads_every_module_a_driver_declares_in_the_drivers_order(monkeypatch, tmp_path):
    tried = []

    def modprobe(argv, **kwargs):
        tried.append(argv[-1])
        return Completed(tuple(argv), 0 if argv[-1] != "raid10" else 1, "", "", 0.0)

    monkeypatch.setattr(guest_agent, "execute", modprobe)
    (tmp_path / "tree" / "6.1").mkdir(parents=True)
    loaded = guest_agent.load_modules(tmp_path / "guest", "6.1", tmp_path / "tree")
    declared_modules = [module for cls in DRIVERS.values() for module in cls.guest_modules]
    assert tried == ["loop", *dict.fromkeys(declared_modules)]  # each once, in the drivers' rank order
    assert loaded == tuple(m for m in tried if m != "raid10")  # what would not load is not reported
    assert {"raid0", "raid1", "raid10", "raid456"} <= set(DRIVERS["ext4"].guest_modules)  # md's levels
    assert guest_agent.load_modules(tmp_path / "guest", "6.2", tmp_path / "tree") == ()  # no modules for it


def test_the_kernel_help_names_each_filesystem_a_guest_loads_as_a_module():
    from pytest_fsbench.settings import OPTIONS

    help_text = next(option.help for option in OPTIONS if option.flag == "--kernel")
    guest_only = [cls.name for cls in declared() if cls.kernel_name in cls.guest_modules]
    assert guest_only and f"md RAID, {', '.join(GUEST_FILESYSTEMS)})" in help_text
    assert sorted(GUEST_FILESYSTEMS) == sorted(guest_only)


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
    from pytest_fsbench import doctor
    from pytest_fsbench.workloads import filebench

    monkeypatch.setattr(filebench, "find_filebench", lambda: None)
    lines = doctor.doctor_lines(host(), width=1000)
    rows = lines[lines.index("workloads:") + 1:lines.index("options (--fs-opt FS:KEY=VALUE):")]
    assert [row.split()[0] for row in rows] == [m.__name__.rsplit(".", 1)[1] for m in WORKLOAD_MODULES]
    assert f"filebench     skip: {filebench.MISSING_REASON}" in [row.strip() for row in rows]


def test_a_btrfs_device_the_kernel_already_dropped_is_nothing_to_forget():
    from pytest_fsbench.errors import CommandError
    from pytest_fsbench.filesystems import BuildContext
    from pytest_fsbench.targets.undo import UndoStack

    # a recorder: here the device is registered again after the unmount (udev scans it), so a kernel that drops
    # it first (a virtual machine's 6.1, before its udev scans) is played by btrfs-progs' own words
    def execute(argv, **_):
        if argv[:4] == ["btrfs", "device", "scan", "--forget"]:
            raise CommandError(argv, 1, "ERROR: cannot unregister device '/dev/vda': No such file or directory")
        return Completed(tuple(argv), 0, "", "", 0.0)

    ctx = BuildContext("fsbench-1-abcd-1", ("/dev/vda",), "/mnt/t", "/tmp/dev")
    undo = UndoStack(execute)
    for step in driver("btrfs").plan(CaseSpec("btrfs", "single"), ctx):
        undo.push(*step.undo, gone=step.gone)
    assert undo.unwind() == []


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


@pytest.mark.parametrize("fs, options, setting, routes", [
    ("btrfs", {"compress": "lzo", "mount": "noatime,compress=zstd"}, "compress",
     ["btrfs:compress=lzo", "btrfs:mount=noatime,compress=zstd"]),
    ("btrfs", {"compress-force": "zstd", "compress": "lzo"}, "compress",
     ["btrfs:compress-force=zstd", "btrfs:compress=lzo"]),
    ("btrfs", {"mount": "noatime"}, "compress", None),
    ("ext4", {"mount": "noatime", "mkfs": "-O ^has_journal"}, "noatime", None),
])
def test_the_routes_to_a_setting(fs, options, setting, routes):
    """Issue 34: a setting given both as a key and inside mount= is two routes to it."""
    assert DRIVERS[fs]().routes(options).get(setting) == routes


@pytest.mark.parametrize("value, spelled", [("131072", "128K"), ("128k", "128K"), ("1024K", "1M"), ("512", "512")])
def test_a_zfs_record_size_has_one_spelling(value, spelled):
    zfs = DRIVERS["zfs"]()
    zfs.check_option("recordsize", value)
    assert zfs.canonical_value("recordsize", value) == spelled
