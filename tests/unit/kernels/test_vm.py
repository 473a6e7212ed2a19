"""--kernel=vm: parsing vm kernels, the bzImage's release, KVM or emulation, virtme-ng's command
line, the guest's disks and agent port found in sysfs, OpenZFS's pools on whole virtio disks, and
emulated numbers labelled and never compared with others."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest

from pytest_fsbench.verdicts.baseline import compare_pairs
from pytest_fsbench.bench import CaseResult
from pytest_fsbench.case import CaseSpec
from pytest_fsbench.errors import UsageError
from pytest_fsbench.filesystems import BuildContext
from pytest_fsbench.filesystems.zfs import Zfs, first_partition
from pytest_fsbench.kernels.guest_agent import agent_port, discards, disk_bytes, local_datasets, virtio_disks
from pytest_fsbench.kernels.kernel import Kernel, bzimage_release, check_kernel_mix, debian_kernel, parse_kernels
from pytest_fsbench.matrix import build_matrix
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Series, SeriesKey, Store
from pytest_fsbench.workloads.dd import DdWrite
from pytest_fsbench.measure.run import dataset_files
from pytest_fsbench.views.tables import results_table
from pytest_fsbench.kernels.vm import accelerator, agent_command, disk_images, planned_emulation, qemu_options, vng_argv
from pytest_fsbench.store.facts import check_emulation, emulation, mixed_emulation

#: the first bytes of a bzImage's setup header as `make` writes them: "HdrS" at 0x202, the
#: kernel_version pointer at 0x20E (relative to 0x200), the version string where it points
VERSION = b"6.9.0-rc1-patched (dev@box) #3 SMP PREEMPT_DYNAMIC Mon Apr 1 10:00:00 UTC 2024"


def bzimage(path: Path, version: bytes = VERSION) -> Path:
    data = bytearray(0x4000)
    data[0x202:0x206] = b"HdrS"
    data[0x20E:0x210] = (0x3000 - 0x200).to_bytes(2, "little")
    data[0x3000:0x3000 + len(version) + 1] = version + b"\0"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))
    return path


def test_the_release_is_read_from_the_bzimage_header(tmp_path):
    assert bzimage_release(bzimage(tmp_path / "bzImage").read_bytes()) == "6.9.0-rc1-patched"
    assert bzimage_release(b"\x7fELF" + bytes(0x400)) is None
    assert bzimage_release(b"short") is None


def test_the_debian_kernel_is_the_newest_image_with_its_modules(tmp_path):
    boot, modules = tmp_path / "boot", tmp_path / "modules"
    for release in ("6.1.0-9-amd64", "6.1.0-56-amd64", "6.12.0-1-amd64"):
        bzimage(boot / f"vmlinuz-{release}")
    (modules / "6.1.0-9-amd64").mkdir(parents=True)
    (modules / "6.1.0-56-amd64").mkdir()
    assert debian_kernel(boot, modules) == boot / "vmlinuz-6.1.0-56-amd64"  # 6.12's modules are gone
    assert debian_kernel(tmp_path / "empty", modules) == tmp_path / "empty" / "vmlinuz"


def test_vm_kernels_are_parsed_beside_host_and_uml(tmp_path):
    image = bzimage(tmp_path / "linux-fix" / "arch" / "x86" / "boot" / "bzImage")
    kernels = parse_kernels(f"host,vm,vm:{image},vm:base={image}")
    assert [k.label for k in kernels] == ["host", "vm", "vm-linux-fix", "vm-base"]
    assert [k.kind for k in kernels] == ["host", "vm", "vm", "vm"] and all(k.vm for k in kernels[1:])
    assert kernels[2].path == image
    tree = parse_kernels(f"vm:{tmp_path / 'linux-fix'}")[0]
    assert tree.label == "vm-linux-fix" and tree.missing() is None
    assert parse_kernels("host+vm")[1].fallback


@pytest.mark.parametrize("value, message", [
    ("vm:relative/bzImage", "give the kernel's absolute path"),
    ("vm:/no/such/bzImage", "/no/such/bzImage does not exist; name a bzImage or a kernel build tree"),
    ("vm:/bin/true", "/bin/true is not a bzImage"),
    ("vm:a/b=/bin/true", "the name 'a/b' must be letters"),
    ("vm,vm", "two kernels are both named 'vm'; name them apart with vm:NAME=PATH"),
])
def test_bad_vm_kernels_are_one_line_usage_errors(value, message):
    with pytest.raises(UsageError, match=message) as error:
        parse_kernels(value)
    assert "\n" not in str(error.value) and value in str(error.value)


def test_a_missing_debian_kernel_names_its_package():
    assert "linux-image-amd64" in Kernel("vm", Path("/boot/vmlinuz"), vm=True).missing()


CPUINFO = "processor\t: 0\nflags\t\t: fpu vme de pse {}sse2 hypervisor\n"


@pytest.mark.parametrize("flag, kvm, expected", [
    ("vmx ", True, "kvm"), ("svm ", True, "kvm"),
    ("", True, "tcg"),  # a paravirtual KVM (PVM): /dev/kvm without VMX/SVM boots no stock kernel
    ("vmx ", False, "tcg"),
])
def test_kvm_only_where_the_cpu_virtualises(flag, kvm, expected):
    assert accelerator(CPUINFO.format(flag), kvm) == expected


def test_the_guest_is_named_by_its_session_and_its_disks_bypass_the_hosts_cache(tmp_path):
    images = disk_images(tmp_path, "fsbench-123-abcd-vm")
    # room for the largest case: raid10 with a mirrored log, a cache and a mirrored special vdev
    assert [i.name for i in images] == [f"fsbench-123-abcd-vm-disk{n}.img" for n in range(9)]
    sock = tmp_path / "run" / "agent.sock"
    kernel = Kernel("vm", Path("/boot/vmlinuz-6.1.0-56-amd64"), vm=True)
    argv = vng_argv("/venv/bin/vng", kernel, "tcg", "fsbench-123-abcd-vm", images, sock, "true", (tmp_path,))
    assert argv[:3] == ["/venv/bin/vng", "--run", "/boot/vmlinuz-6.1.0-56-amd64"]
    assert argv[argv.index("--name") + 1] == "fsbench-123-abcd-vm" and "--disable-kvm" in argv
    assert f"--rwdir={tmp_path}" in argv and argv[-2:] == ["--exec", "true"]
    assert "--disable-kvm" not in vng_argv("vng", kernel, "kvm", "n", images, sock, "true")
    qemu = shlex.split(next(a for a in argv if a.startswith("--qemu-opts=")).split("=", 1)[1])
    drives = [qemu[i + 1] for i, a in enumerate(qemu) if a == "-drive"]
    assert len(drives) == 9 and all("cache=none" in d and "discard=unmap" in d and "format=raw" in d for d in drives)
    assert "virtio-blk-pci,drive=fsbench3,serial=fsbench3" in qemu
    assert f"socket,id=fsbench-agent,path={sock}" in qemu  # QEMU connects to the host's socket
    assert qemu == qemu_options(images, sock)


def test_passed_through_devices_are_neither_discarded_nor_locked(tmp_path):
    sock = tmp_path / "agent.sock"
    qemu = qemu_options([Path("/dev/sdx"), Path("/dev/sdy")], sock, passed_through=True)
    drives = [qemu[i + 1] for i, a in enumerate(qemu) if a == "-drive"]
    assert drives[0].startswith("file=/dev/sdx,") and drives[1].startswith("file=/dev/sdy,")
    assert all("cache=none" in d and "file.locking=off" in d and "discard" not in d for d in drives)


def test_the_agent_runs_with_the_openzfs_userland_first_on_path(tmp_path):
    bare = shlex.split(agent_command("/venv/bin/python", Path("/run/x"), tmp_path))
    assert bare[-5:] == ["/venv/bin/python", "-m", "pytest_fsbench.kernels.guest_agent", "--vm", "/run/x"]
    assert not any(word.startswith("LD_LIBRARY_PATH=") for word in bare)
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin" / "zpool").write_text("")
    words = shlex.split(agent_command("/venv/bin/python", Path("/run/x"), tmp_path))
    path = next(w for w in words if w.startswith("PATH="))
    assert path.startswith(f"PATH={tmp_path}/sbin:") and f"LD_LIBRARY_PATH={tmp_path}/lib/x86_64-linux-gnu" in words


def test_the_guests_disks_and_port_are_found_by_name_in_sysfs(tmp_path):
    for disk, serial in (("vda", "fsbench0"), ("vdb", "fsbench1"), ("vdc", "other"), ("vdd", "fsbench2")):
        (tmp_path / "block" / disk).mkdir(parents=True)
        (tmp_path / "block" / disk / "serial").write_text(serial + "\n")
    assert virtio_disks(tmp_path / "block") == {0: "/dev/vda", 1: "/dev/vdb", 2: "/dev/vdd"}
    (tmp_path / "block" / "vde").mkdir()
    (tmp_path / "block" / "vde" / "serial").write_text("fsbench11\n")  # more --devices than a layout needs
    assert virtio_disks(tmp_path / "block")[11] == "/dev/vde"
    for disk, sectors, discard in (("vda", "2097152", "2147483648"), ("vdb", "8", "0")):
        (tmp_path / "block" / disk / "size").write_text(sectors + "\n")
        (tmp_path / "block" / disk / "queue").mkdir()
        (tmp_path / "block" / disk / "queue" / "discard_max_bytes").write_text(discard + "\n")
    assert disk_bytes("/dev/vda", tmp_path / "block") == 1 << 30 and disk_bytes("/dev/vdb", tmp_path / "block") == 4096
    assert discards("/dev/vda", tmp_path / "block") and not discards("/dev/vdb", tmp_path / "block")
    for port, name in (("vport1p1", "virtme.stdin"), ("vport7p1", "fsbench.agent")):
        (tmp_path / "ports" / port).mkdir(parents=True)
        (tmp_path / "ports" / port / "name").write_text(name + "\n")
    assert agent_port(tmp_path / "ports") == "/dev/vport7p1"
    with pytest.raises(RuntimeError, match="no virtio serial port named fsbench.agent"):
        agent_port(tmp_path / "block")


def test_an_openzfs_pool_on_whole_disks_is_imported_from_their_partitions():
    assert [first_partition(d) for d in ("/dev/vda", "/dev/loop3", "/dev/nvme0n1")] == [
        "/dev/vda1", "/dev/loop3p1", "/dev/nvme0n1p1"]
    ctx = BuildContext("p", ("/dev/vda", "/dev/vdb"), "/mnt/p", "/w")
    spec = CaseSpec("zfs", "raid1")
    links = [step.argv[-1] for step in Zfs(impl="openzfs").plan(spec, ctx) if step.argv[0] == "ln"]
    assert links == ["/w/vda", "/w/vdb", "/w/vda1", "/w/vdb1"]
    fuse = [step.argv[-1] for step in Zfs(impl="zfs-fuse").plan(spec, ctx) if step.argv[0] == "ln"]
    assert fuse == ["/w/vda", "/w/vdb"]
    assert dataclasses.replace(spec, kernel="vm").id == "vm-zfs-raid1"


TCG = {"kernel": {"runs_under": "vm", "label": "vm", "accelerator": "tcg"}}
KVM = {"kernel": {"runs_under": "vm", "label": "vm", "accelerator": "kvm"}}
UML = {"kernel": {"runs_under": "uml", "label": "uml"}}


def test_emulated_numbers_are_told_apart_by_the_manifest():
    assert [emulation(m) for m in (TCG, KVM, UML, {}, {"kernel": "6.1"})] == ["emulated", "kvm", None, None, None]
    assert mixed_emulation({"vm-xfs-raid1": "emulated", "ext4-single": None},
                           {"vm-xfs-raid1": "kvm", "ext4-single": None, "vm-zfs-single": "emulated"}) == [
        "vm-xfs-raid1 (emulated against kvm)"]
    assert mixed_emulation({"vm-xfs-raid1": "emulated"}, {"vm-xfs-raid1": "emulated"}) == []
    with pytest.raises(UsageError, match="vm-xfs-raid1 \\(kvm against emulated\\): numbers measured under QEMU's"):
        check_emulation({"vm-xfs-raid1": "kvm"}, {"vm-xfs-raid1": "emulated"}, "--compare nightly")


def test_a_session_plans_its_emulation_from_its_kernels():
    specs = build_matrix(("xfs",), ("raid1",), [], ("host", "vm"))
    kernels = (Kernel("host"), Kernel("vm", Path("/boot/vmlinuz-x"), vm=True))
    assert planned_emulation(specs, kernels, "tcg") == {"xfs-raid1": None, "vm-xfs-raid1": "emulated"}
    assert planned_emulation(specs, kernels, "kvm") == {"xfs-raid1": None, "vm-xfs-raid1": "kvm"}


def test_an_emulated_kernel_is_never_paired_with_the_hosts(tmp_path):
    image = bzimage(tmp_path / "bzImage")
    with pytest.raises(UsageError, match="vm run under QEMU's CPU emulation here .* compared with host's"):
        check_kernel_mix(parse_kernels("host,vm"), "tcg")
    with pytest.raises(UsageError, match="vm-b run under QEMU's CPU emulation here .* uml's"):
        check_kernel_mix(parse_kernels(f"uml,vm:b={image}"), "tcg")
    check_kernel_mix(parse_kernels(f"vm,vm:again={image}"), "tcg")  # emulated against emulated
    check_kernel_mix(parse_kernels("host,vm"), "kvm")
    check_kernel_mix(parse_kernels("host+vm"), "tcg")  # one kernel per case: nothing is paired


def test_the_summary_marks_emulated_cases():
    test = "benchmarks/test_dd.py::test_dd_write[vm-xfs-raid1-1M]"
    series = Series(SeriesKey(test, "dd", '{"bs":"1M"}', "dd.write", '{"bs":"1M"}'), "vm-xfs-raid1", "MB/s",
                    Direction.HIGHER, (70.0, 80.0))
    lines = results_table([CaseResult(test, "vm-xfs-raid1", [series], "runs", emulated=True)])
    assert lines[1].startswith("test_dd_write[vm-xfs-raid1-1M] emulated ")
    assert lines[2].startswith("emulated: measured in a virtual machine whose CPU QEMU emulates")
    plain = results_table([CaseResult(test, "vm-xfs-raid1", [series], "runs")])
    assert "emulated" not in "\n".join(plain)


def test_a_comparison_of_emulated_with_kvm_numbers_is_refused(tmp_path):
    store = Store(tmp_path / "fsbench.db")
    sessions = []
    for manifest in (TCG, KVM, TCG):
        session = store.start_session(f"tok{len(sessions)}", {}, {"hostname": "h"})
        row = store.case_row(session, "t[vm-xfs-raid1]", "vm-xfs-raid1", {"fs": "xfs"}, "dd", {"bs": "1M"}, "drop",
                             "random", manifest)
        for value in (70.0, 80.0, 75.0):
            store.add_run(row, False, "t", 1.0, "drop", [Metric("dd.write", value, "MB/s", Direction.HIGHER)])
        sessions.append(session)
    assert store.case_manifests(sessions[1]) == {"vm-xfs-raid1": KVM}
    with pytest.raises(UsageError, match="vm-xfs-raid1 \\(emulated against kvm\\)"):
        compare_pairs(store, [sessions[0]], sessions[1], 0.05)
    assert len(compare_pairs(store, [sessions[0]], sessions[2], 0.05)) == 1  # emulated against emulated
    store.close()


def test_a_guest_copies_the_hosts_data_sets_into_its_memory_where_they_fit(tmp_path):
    shared, local = tmp_path / "shared", tmp_path / "local"
    small_set, large_set = DdWrite(total_size="1M", data="50%"), DdWrite(total_size="2M", data="random")
    [small_file] = dataset_files(small_set, shared).values()  # the host generates them
    [large_file] = dataset_files(large_set, shared).values()
    local_datasets(small_set, shared, local, room=1 << 20)
    local_datasets(large_set, shared, local, room=1 << 20)
    small_copy, large_copy = local / "datasets" / small_file.name, local / "datasets" / large_file.name
    assert not small_copy.is_symlink() and small_copy.read_bytes() == small_file.read_bytes()
    assert large_copy.is_symlink() and large_copy.resolve() == large_file  # too large: read where it is


def test_the_agent_imports_the_fsbench_the_host_runs(tmp_path):
    checkout = shlex.split(agent_command("/venv/bin/python", Path("/run/x"), tmp_path, Path("/src/fsbench")))
    assert "PYTHONPATH=/src/fsbench" in checkout
    installed = Path("/venv/lib/python3.11/site-packages")
    assert not any(w.startswith("PYTHONPATH=") for w in shlex.split(agent_command("/p", Path("/r"), tmp_path, installed)))
