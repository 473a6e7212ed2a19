"""--kernel: parsing, the case matrix under several kernels, the guest's boot line and init, its
request channel, finding a killed guest's processes, and --memory under a guest kernel."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import os
from pathlib import Path

import pytest

from conftest import settings_of

from pytest_fsbench.case import CaseSpec
from pytest_fsbench.targets.cleanup import guest_processes
from pytest_fsbench.errors import UsageError
from pytest_fsbench.kernels.guest import Channel, GuestFacts, boot_argv, init_script
from pytest_fsbench.system.host import Host
from pytest_fsbench.kernels.kernel import DEBIAN_UML, HOST, Kernel, compared, fallback, parse_kernels
from pytest_fsbench.matrix import build_matrix, kernel_pairs
from pytest_fsbench.provisioning import memory_refused

#: an executable file with an ELF header and UML's banner, standing in for a UML kernel (never run)
UML = Path(__file__).resolve().parents[2] / "data" / "kernels" / "stand-in-uml"


#: this machine as the host+uml tests see it: ext4/xfs/btrfs, every tool, no md driver
NO_MD = Host("6.1.0", frozenset({"ext4", "xfs", "btrfs", "fuse"}),
             frozenset({"mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "btrfs", "mdadm", "zpool", "zfs", "zfs-fuse"}),
             has_md=False, zfs_module=False, is_root=True, ram_bytes=8 << 30)


def settings(host: Host = NO_MD, **given):
    return settings_of(host, **given)


def test_kernels_parsed_with_labels():
    assert parse_kernels("host") == (Kernel(HOST),)
    assert parse_kernels("host,uml") == (Kernel(HOST), Kernel("uml", DEBIAN_UML))
    assert parse_kernels(f"uml:{UML}") == (Kernel("uml-stand-in-uml", UML),)
    assert parse_kernels(f"uml:patched={UML}") == (Kernel("uml-patched", UML),)


def test_host_plus_a_guest_is_the_host_and_a_fallback():
    assert parse_kernels("host+uml") == (Kernel(HOST), Kernel("uml", DEBIAN_UML, fallback=True))
    assert parse_kernels(f" host+uml:patched={UML} ") == (Kernel(HOST), Kernel("uml-patched", UML, fallback=True))
    kernels = parse_kernels("host+uml")
    assert compared(kernels) == (HOST,) and fallback(kernels) == Kernel("uml", DEBIAN_UML, fallback=True)
    ab = parse_kernels("host,uml")
    assert compared(ab) == (HOST, "uml") and fallback(ab) is None


def test_a_kernel_tree_is_named_by_its_directory(tmp_path):
    kernel = tmp_path / "linux-6.8-rc1" / "linux"
    kernel.parent.mkdir()
    kernel.write_bytes(UML.read_bytes())
    kernel.chmod(0o755)
    assert parse_kernels(f"uml:{kernel}")[0].label == "uml-linux-6.8-rc1"


def test_a_program_that_is_no_uml_kernel_is_refused(tmp_path):
    """Issue 23: --kernel=uml:a=/bin/true booted /bin/true as a kernel in every case."""
    with pytest.raises(UsageError, match="/bin/true is a program but no User-mode Linux kernel "
                                         r"\(no 'User Mode Linux' banner in it\); build one with 'make ARCH=um'"):
        parse_kernels("uml:a=/bin/true")
    script = tmp_path / "linux"
    script.write_text("#!/bin/sh\necho User Mode Linux\n")
    script.chmod(0o755)
    with pytest.raises(UsageError, match=f"{script} is not an ELF program, so no User-mode Linux kernel"):
        parse_kernels(f"uml:{script}")
    # the banner split across two reads is still found
    big = tmp_path / "big" / "linux"
    big.parent.mkdir()
    big.write_bytes(b"\x7fELF" + b"\0" * ((1 << 20) - 10) + b"User Mode Linux v6" + b"\0" * 100)
    big.chmod(0o755)
    assert parse_kernels(f"uml:{big}")[0].path == big


@pytest.mark.parametrize("text, message", [
    ("vmm", "unknown kernel .vmm.; choose host, uml"),
    ("uml:", "unknown kernel 'uml:'"),
    ("uml:relative/linux", "give the UML kernel's absolute path"),
    ("uml:/no/such/linux", "/no/such/linux does not exist; build it with 'make ARCH=um'"),
    (f"uml:a/b={UML}", "the name 'a/b' must be letters"),
    (f"uml:x={UML},uml:x={UML}", "two kernels are both named 'uml-x'; name them apart"),
    ("uml,uml", "two kernels are both named 'uml'"),
    ("host+uml,uml", "host\\+uml chooses one kernel per case, so give it alone; list kernels \\(host,uml\\)"),
    ("host,host+uml", "host\\+uml chooses one kernel per case, so give it alone"),
    ("host+host", "after host\\+ name a guest kernel: host\\+uml, host\\+uml:PATH"),
    ("host+", "after host\\+ name a guest kernel"),
    ("host+umlx", "unknown kernel 'umlx'"),
    ("host+uml:/no/such/linux", "/no/such/linux does not exist"),
])
def test_bad_kernels_are_one_line_usage_errors(text, message):
    with pytest.raises(UsageError, match=message) as error:
        parse_kernels(text)
    assert "\n" not in str(error.value) and text in str(error.value)


def test_a_file_that_is_not_executable_is_no_kernel(tmp_path):
    image = tmp_path / "bzImage"
    image.write_text("")
    image.chmod(0o644)
    with pytest.raises(UsageError, match=f"{image} is not an executable file"):
        parse_kernels(f"uml:{image}")


def test_a_missing_uml_kernel_is_a_reason_not_an_error():
    assert Kernel(HOST).missing() is None
    assert Kernel("uml", UML).missing() is None
    assert "is not an executable file" in Kernel("uml-x", Path("/no/such/linux")).missing()


def test_guest_cases_are_named_by_their_kernel():
    specs = build_matrix(("ext4",), ("single", "raid1"), [], ("uml", "uml-b"))
    assert [s.id for s in specs] == ["uml-ext4-single", "uml-b-ext4-single", "uml-ext4-raid1", "uml-b-ext4-raid1"]
    assert specs[0].to_dict()["kernel"] == "uml" and specs[0].in_guest
    host = CaseSpec("ext4", "single")
    assert host.id == "ext4-single" and "kernel" not in host.to_dict() and not host.in_guest


def test_each_other_kernel_is_paired_with_the_first():
    specs = build_matrix(("xfs",), ("raid5",), [], ("uml", "uml-b", "uml-c"))
    assert [(a.id, b.id) for a, b in kernel_pairs(specs, ("uml", "uml-b", "uml-c"))] == [
        ("uml-xfs-raid5", "uml-b-xfs-raid5"), ("uml-xfs-raid5", "uml-c-xfs-raid5")]


def test_two_kernels_make_an_interleaved_paired_session():
    s = settings(**{"--kernel": f"uml,uml:b={UML}", "--fs": "ext4,btrfs", "--runs": "6"})
    assert s.interleave
    assert [(a.id, b.id) for a, b in s.pairs] == [("uml-ext4-single", "uml-b-ext4-single"),
                                                  ("uml-btrfs-single", "uml-b-btrfs-single")]
    assert [spec.id for spec in s.specs] == ["uml-ext4-single", "uml-b-ext4-single", "uml-btrfs-single",
                                             "uml-b-btrfs-single"]


def test_kernels_and_paired_options_are_not_mixed():
    with pytest.raises(UsageError, match="a session compares either kernels or options"):
        settings(**{"--kernel": f"uml,uml:b={UML}", "--fs": "btrfs", "--paired": ["btrfs:compress=zstd"]})


def test_a_kernel_pair_needs_rounds_enough_to_decide():
    with pytest.raises(UsageError, match="can never show a significant difference"):
        settings(**{"--kernel": f"uml,uml:b={UML}", "--runs": "3"})


def test_host_plus_uml_runs_each_case_once_under_one_kernel():
    s = settings(**{"--kernel": "host+uml", "--fs": "ext4,btrfs", "--layout": "single,raid1", "--runs": "2"})
    assert [spec.id for spec in s.specs] == ["ext4-single", "uml-ext4-raid1", "btrfs-single", "btrfs-raid1"]
    assert not s.pairs and not s.interleave
    assert {k.label: k.path for k in s.kernels} == {HOST: None, "uml": DEBIAN_UML}


def test_host_plus_uml_keeps_every_case_on_a_host_with_md():
    s = settings(host=dataclasses.replace(NO_MD, has_md=True), **{"--kernel": "host+uml", "--layout": "raid5"})
    assert [spec.id for spec in s.specs] == ["ext4-raid5"]


def test_host_plus_vm_runs_what_zfs_fuse_cannot_express_in_the_virtual_machine_with_its_siblings():
    s = settings(**{"--kernel": "host+vm", "--fs": "zfs,btrfs", "--layout": "single,raid1",
                    "--fs-opt": ["zfs:compression=lz4", "zfs:compression=off"]})
    assert [spec.id for spec in s.specs] == [
        "vm-zfs-single-compression=lz4", "vm-zfs-raid1-compression=lz4", "vm-zfs-single-compression=off",
        "vm-zfs-raid1-compression=off", "btrfs-single", "btrfs-raid1"]
    assert not s.pairs and [k.label for k in s.kernels if k.fallback] == ["vm"]
    s = settings(**{"--kernel": "host+uml", "--fs": "zfs", "--fs-opt": ["zfs:compression=lz4"]})
    assert [spec.id for spec in s.specs] == ["zfs-single"]  # never in a UML kernel: it skips on the host


def test_host_plus_vm_runs_a_paired_variant_zfs_fuse_cannot_express_with_its_reference():
    s = settings(**{"--kernel": "host+vm", "--fs": "zfs,btrfs", "--fs-opt": ["zfs:compression=off"],
                    "--paired": ["zfs:compression=lz4"]})
    assert [(a.id, b.id) for a, b in s.pairs] == [("vm-zfs-single-compression=off", "vm-zfs-single-compression=lz4")]
    assert [spec.id for spec in s.specs] == ["vm-zfs-single-compression=off", "vm-zfs-single-compression=lz4",
                                             "btrfs-single"]


def test_host_plus_uml_allows_paired_options():
    s = settings(**{"--kernel": "host+uml", "--fs": "btrfs,xfs", "--layout": "raid1",
                    "--paired": ["btrfs:compress=zstd"], "--fs-opt": ["xfs:mount=noatime"]})
    assert [(a.id, b.id) for a, b in s.pairs] == [("btrfs-raid1", "btrfs-raid1-compress=zstd")]
    assert [spec.id for spec in s.specs][-1] == "uml-xfs-raid1"


def test_boot_line_wires_the_channel_to_the_second_console():
    argv = boot_argv(Kernel("uml", UML), Path("/run/fsbench/1-abcd/guest-1/init"), 5, 8, memory="1G")
    assert argv[0] == str(UML)
    assert {"mem=1G", "rootfstype=hostfs", "rootflags=/", "init=/run/fsbench/1-abcd/guest-1/init",
            "con1=fd:5,fd:8", "con0=null,fd:1"} <= set(argv)


def test_init_gives_the_guest_its_own_run_keeping_the_session_directory():
    script = init_script("/venv/bin/python", Path("/run/fsbench/1-abcd/guest-2")).splitlines()
    assert script[0] == "#!/bin/sh"
    keep = "/run/fsbench/1-abcd"
    assert script.index(f"mount --bind {keep} /dev/.fsbench-run") < script.index(
        "mount -t tmpfs -o mode=755 tmpfs /run") < script.index(f"mount --move /dev/.fsbench-run {keep}")
    assert script[-1].endswith("/venv/bin/python -m pytest_fsbench.kernels.guest_agent /run/fsbench/1-abcd/guest-2")
    elsewhere = init_script("/venv/bin/python", Path("/tmp/x/guest-1"))
    assert "mount --bind" not in elsewhere and "mount -t tmpfs -o mode=755 tmpfs /run" in elsewhere


def test_the_guests_agent_imports_the_fsbench_the_host_runs():
    checkout = init_script("/venv/bin/python", Path("/tmp/x/guest-1"), Path("/src/fsbench")).splitlines()[-1]
    assert " PYTHONPATH=/src/fsbench " in checkout  # env -i dropped the host's
    installed = init_script("/venv/bin/python", Path("/tmp/x/guest-1"), Path("/venv/lib/python3.11/site-packages"))
    assert "PYTHONPATH" not in installed


def test_channel_carries_objects_both_ways_and_ends():
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    a, b = Channel(a_read, a_write), Channel(b_read, b_write)
    message = ("measure", CaseSpec("ext4", "raid10", kernel="uml"), "x" * 20_000)  # within a pipe's buffer: nobody reads while it is sent
    a.send(message)
    assert b.receive(timeout=5) == message
    b.send(("ok", 42))
    assert a.receive(timeout=5) == ("ok", 42)
    os.close(b_write)
    assert a.receive(timeout=5) is None
    for fd in (a_read, a_write, b_read):
        os.close(fd)


def test_channel_gives_up_when_the_guest_is_gone():
    read, write = os.pipe()
    try:
        with pytest.raises(Exception, match="the guest kernel exited"):
            Channel(read, write).receive(timeout=30, alive=lambda: False)
    finally:
        os.close(read)
        os.close(write)


def test_a_killed_sessions_guest_processes_are_found_by_their_init():
    commands = [(10, ["/usr/bin/linux.uml", "mem=2G", "init=/run/fsbench/7-abcd/guest-1/init"]),
                (11, ["/usr/bin/linux.uml", "init=/run/fsbench/8-ef01/guest-1/init"]),
                (12, ["bash"]), (13, []),
                (14, ["/usr/bin/qemu-system-x86_64", "-name", "fsbench-7-abcd-vm", "-chardev",
                      "socket,id=fsbench-agent,path=/run/fsbench/7-abcd/vm-vm/agent.sock"]),
                (15, ["/usr/bin/qemu-system-x86_64", "-chardev",
                      "socket,id=fsbench-agent,path=/run/fsbench/8-ef01/vm-vm/agent.sock"])]
    assert guest_processes(Path("/run/fsbench/7-abcd"), commands) == [10, 14]


def test_a_memory_limit_in_a_guest_is_its_own_and_below_its_memory():
    """--memory under a guest kernel limits a group of the guest's own (its 2G of memory): a limit
    at or above that would limit nothing, refused where a case runs in the guest."""
    assert settings(**{"--fs": "ext4", "--layout": "raid1", "--kernel": "host+uml", "--memory": "1G"}).memory == 1 << 30
    with pytest.raises(UsageError, match=r"^--memory=2G with cases under uml: a guest kernel has 2G of memory, so the "
                                         r"limit would limit nothing there; give less than 2G, or leave --memory out$"):
        settings(**{"--fs": "ext4", "--layout": "raid1", "--kernel": "host+uml", "--memory": "2G"})
    on_the_host = settings(**{"--fs": "ext4", "--layout": "single", "--kernel": "host+uml", "--memory": "2G"})
    assert on_the_host.memory == 2 << 30 and not any(spec.in_guest for spec in on_the_host.specs)


def test_memory_is_refused_under_a_guest_kernel_without_memory_control_groups():
    kernel = Kernel("uml-mine", Path("/src/linux/linux"))
    without = GuestFacts(NO_MD, "6.6.1", ())
    assert memory_refused(kernel, without) == (
        "--memory with --kernel=uml-mine: the guest kernel /src/linux/linux (6.6.1) has no memory control group "
        "(neither cgroup v2's memory controller nor v1's), so the limit cannot apply in it; build it with "
        "CONFIG_MEMCG=y, or leave --memory out")
    assert memory_refused(kernel, dataclasses.replace(without, memory_cgroup="v2")) is None



def test_a_guests_2xram_is_twice_its_own_memory():
    """A 2xRAM file is meant to outgrow the page cache of the kernel that reads it: in a 2G guest
    it is 4G, not twice the host's 24G (a 48G file the guest's cache could never have held)."""
    from pytest_fsbench.kernels.kernel import GUEST_MEMORY, ram_of
    from pytest_fsbench.sizes import parse_size
    assert ram_of("uml", None, 24 << 30) == ram_of("vm", None, 24 << 30) == parse_size(GUEST_MEMORY) == 2 << 30
    assert ram_of("host", None, 24 << 30) == 24 << 30
    assert ram_of("vm", 96 << 20, 24 << 30) == ram_of("host", 96 << 20, 24 << 30) == 96 << 20  # --memory's limit


def test_a_kernels_build_id_is_read_from_its_elf_note_as_readelf_shows_it():
    """Without binutils (the bench does not install it): the note's header, then its 20 bytes."""
    from pytest_fsbench.kernels.guest import GNU_BUILD_ID_NOTE, gnu_build_id
    assert gnu_build_id(b"\x7fELF" + bytes(60) + GNU_BUILD_ID_NOTE + bytes(range(20)) + b"rest") == bytes(range(20)).hex()
    assert gnu_build_id(b"\x7fELF no notes") is None
    kernel = Path("/usr/bin/linux.uml")
    if not kernel.is_file() or shutil.which("readelf") is None:
        return  # the constructed image above is the whole check here
    shown = subprocess.run(["readelf", "-n", str(kernel)], capture_output=True, text=True).stdout
    assert f"Build ID: {gnu_build_id(kernel.read_bytes())}" in shown
