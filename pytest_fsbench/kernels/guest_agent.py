"""fsbench's agent, the init of a guest kernel (see guest.py), or the command virtme-ng runs in a
virtual machine (--vm, see vm.py): loads the modules fsbench needs (UML: from the UML package's
tree; vm: the kernel's own, and OpenZFS's), tells the host what the guest offers, then builds,
measures and tears down one target at a time on the host's requests, and powers the guest off
when asked (or when the host is gone). It runs the same drivers, measurement and workloads as the
host; in a virtual machine its devices are the guest's virtio disks."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import pickle
import shutil
import sys
import traceback
import tty
from pathlib import Path

from ..targets.devices import Device, LoopDevices
from ..filesystems import GUEST_MODULES, driver
from .guest import Channel, GuestFacts
from .probe import probe
from .kernel import UML_MODULES
from ..measure.run import DATASETS, measure_run
from ..system.commands import execute
from ..system.memory import CGROUPS, MemoryLimit, hierarchy
from ..targets.target import Target, build_target
from ..targets.undo import UndoStack
from .vm import AGENT_PORT, DISK_SERIAL, OPENZFS_USERLAND

#: what a UML kernel keeps as modules that fsbench may need: loop for the agent's own devices, and
#: what the filesystem drivers declare (md RAID levels, filesystems)
MODULES = ("loop", *GUEST_MODULES)
#: a virtual machine's kernel: what the drivers declare and the filesystems Debian's kernel keeps as
#: modules; OpenZFS (16M records are OpenZFS 2.1's zfs_max_recordsize=16M; 2.2 on allows them)
VM_MODULES = (*GUEST_MODULES, "ext4", "xfs", "btrfs")
#: records up to 16M (2.1's default limit is 1M); no L2ARC rebuilt at a pool's import, so the
#: export/import that empties the ARC before a run empties a cache vdev too (OpenZFS 2.0 on
#: keeps L2ARC across imports)
ZFS_MODULE = ("zfs", "zfs_max_recordsize=16777216", "l2arc_rebuild_enabled=0")
#: a virtual machine's scratch: in its memory (tmpfs), where its copies of the data sets are
LOCAL_SCRATCH = Path("/dev/shm/fsbench-scratch")
LINUX_REBOOT_CMD_POWER_OFF = 0x4321FEDC
CHANNEL = "/dev/tty1"


def load_modules(directory: Path, release: str, tree: Path = UML_MODULES) -> tuple[str, ...]:
    """modprobe each of MODULES from the package's tree for this release (through a directory of
    the guest's own, since modprobe -d wants DIR/lib/modules/RELEASE); the ones that loaded."""
    modules = tree / release
    if not modules.is_dir():
        return ()
    root = directory / "modules"
    link = root / "lib" / "modules" / release
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(modules)
    return tuple(name for name in MODULES
                 if execute(["modprobe", "-d", str(root), name], check=False, timeout=60).returncode == 0)


def load_vm_modules() -> tuple[tuple[str, ...], str | None]:
    """modprobe each of VM_MODULES, and OpenZFS's module when its userland is on PATH; the ones
    that loaded, and OpenZFS's version (None without it)."""
    loaded = [name for name in VM_MODULES if execute(["modprobe", name], check=False, timeout=120).returncode == 0]
    version = None
    if (OPENZFS_USERLAND / "sbin" / "zpool").exists() \
            and execute(["modprobe", *ZFS_MODULE], check=False, timeout=300).returncode == 0:
        loaded.append("zfs")
        version = Path("/sys/module/zfs/version").read_text().strip()
    return tuple(loaded), version


def virtio_disks(sys_block: Path = Path("/sys/block")) -> dict[int, str]:
    """The guest's disks fsbench attached: index -> /dev path, by their serial (fsbench0...)."""
    found = {}
    pattern = re.compile(re.escape(DISK_SERIAL).replace(r"\{\}", r"(\d+)"))
    for serial in sys_block.glob("vd*/serial"):
        match = pattern.fullmatch(serial.read_text().strip())
        if match:
            found[int(match.group(1))] = f"/dev/{serial.parent.name}"
    return found


def disk_bytes(path: str, sys_block: Path = Path("/sys/block")) -> int:
    """A disk's size (its sysfs size counts 512-byte sectors, whatever its block size)."""
    return int((sys_block / Path(path).name / "size").read_text()) * 512


def discards(path: str, sys_block: Path = Path("/sys/block")) -> bool:
    """Whether the disk takes discards (an image's does; a passed-through device's does not)."""
    return int((sys_block / Path(path).name / "queue" / "discard_max_bytes").read_text()) > 0


def memory_cgroups(cgroups: Path = CGROUPS) -> str | None:
    """The guest's memory control groups (--memory): cgroup v2 mounted where the host has it,
    unless something is mounted there already (virtme-ng mounts it; a UML guest's init does
    not); their version, or None when its kernel offers none."""
    if hierarchy(cgroups) is None and cgroups.is_dir() and not os.path.ismount(cgroups):
        execute(["mount", "-t", "cgroup2", "cgroup2", str(cgroups)], check=False, timeout=60)
    found = hierarchy(cgroups)
    return None if found is None else found.version


def memory_bytes() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def local_datasets(workload, shared: Path, local: Path, room: int) -> None:
    """A virtual machine's copy of the workload's data sets (which the host generated into the
    scratch it shares over 9p, a slow read under emulation) in its own memory (tmpfs), where each
    fits in room; a larger one is linked, and read from the shared scratch."""
    for dataset in getattr(workload, "datasets", dict)().values():
        source, copy = shared / DATASETS / dataset.filename, local / DATASETS / dataset.filename
        if copy.exists() or not source.exists():
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        if dataset.size > room:
            copy.symlink_to(source)
            continue
        partial = copy.with_name(copy.name + ".partial")
        shutil.copyfile(source, partial)
        partial.rename(copy)


class VirtioDisks:
    """A virtual machine's virtio disks (on the session's sparse images or its --devices,
    cache=none): the first ones a case needs; wiped after the case, and an image's discarded, so
    the next starts on empty disks."""

    def available(self) -> int | None:
        return len(virtio_disks())

    def acquire(self, count: int, label: str, undo: UndoStack) -> list[Device]:
        disks = virtio_disks()
        if any(index not in disks for index in range(count)):
            raise RuntimeError(f"the guest has {len(disks)} of fsbench's disks, the case needs {count}")
        chosen = [disks[index] for index in range(count)]
        for path in chosen:
            # partitions first (a pool's), then the disk; the discard makes the sparse image sparse again
            discard = f"blkdiscard {path} && " if discards(path) else ""
            undo.push(("sh", "-c", f"wipefs --all --quiet {path}?* 2>/dev/null; wipefs --all --quiet {path} && "
                                   f"{discard}blockdev --rereadpt {path}"))
        return [Device(path, disk_bytes(path), direct_io=True) for path in chosen]


class Agent:
    def __init__(self, directory: Path, channel: Channel, vm: bool = False) -> None:
        self.directory = directory
        self.channel = channel
        self.vm = vm
        release = os.uname().release
        openzfs = None
        if vm:
            modules, openzfs = load_vm_modules()
        else:
            modules = load_modules(directory, release)
        self.facts = GuestFacts(probe(), release, modules, openzfs, memory_cgroups())
        self.stack = contextlib.ExitStack()
        self.limits: dict[int, MemoryLimit] = {}  # the measured runs' memory control groups, by limit
        self.target: Target | None = None
        self.shared_scratch: Path | None = None  # vm: the session's scratch on the host, shared read-write

    def build(self, spec, image_dir: Path, image_size: int, name: str, scratch: Path):
        if self.target is not None:
            raise RuntimeError("a target is already built in this guest")
        if self.vm:
            provider = VirtioDisks()
            below = self._host_cache_bypassed
            self.shared_scratch, scratch = scratch, LOCAL_SCRATCH
        else:
            # hostfs, under the images, has no O_DIRECT: the host's page cache stays below the guest's,
            # so a run measured here empties the host's caches too
            provider = LoopDevices(image_dir, image_size, execute, direct_io=False)
            below = self._empty_host_caches
        # the run's work is counted here, on the guest's own disks (issue 41)
        measure = functools.partial(measure_run, below=below, kernel="vm" if self.vm else "uml")
        self.target = self.stack.enter_context(
            build_target(spec, driver(spec.fs, self.facts.host), provider, execute, self.directory, name, scratch,
                         measure))
        return self.target.manifest, str(self.target.mountpoint), self.target.devices

    def measure(self, workload, cache: str, memory: int | None = None):
        """One measured run; memory: its commands go in a memory control group of this kernel's with
        that limit (the host's --memory, or the workload's own). The Measurement, and the limit's
        record for the case's manifest (None without one)."""
        if self.vm and self.shared_scratch is not None:
            local_datasets(workload, self.shared_scratch, LOCAL_SCRATCH, memory_bytes() // 4)
        if memory is None:
            return self._target().measure(workload, execute, cache), None
        limit = self.limits.setdefault(memory, MemoryLimit(memory, f"guest-{memory >> 20}M"))
        return self._target().measure(workload, execute, cache, limit), limit.record()

    @staticmethod
    def _host_cache_bypassed() -> str:
        return "host cache bypassed (QEMU cache=none)"

    def _empty_host_caches(self) -> str:
        """The images are host files under hostfs: the host's page cache holds them below the
        guest's, so the host empties it too (it answers while this request is open)."""
        self.channel.send(("host-caches",))
        answer = self.channel.receive()
        if answer != ("done",):
            raise RuntimeError(f"the host did not empty its caches: {answer!r}")
        return "host sync+drop_caches"

    def free(self) -> int:
        return shutil.disk_usage(self._target().mountpoint).free

    def command(self, argv: list[str], timeout: float):
        return execute(argv, check=False, timeout=timeout)

    def teardown(self) -> None:
        self.target = None
        try:
            self.stack.close()
        finally:
            for limit in self.limits.values():
                limit.close()

    def _target(self) -> Target:
        if self.target is None:
            raise RuntimeError("no target is built in this guest")
        return self.target


def serve(channel: Channel, agent: Agent) -> None:
    handlers = {"build": agent.build, "measure": agent.measure, "free": agent.free, "execute": agent.command,
                "teardown": agent.teardown}
    while True:
        request = channel.receive()
        if request is None or request[0] == "quit":
            return
        op, *args = request
        try:
            reply = ("ok", handlers[op](*args))
        except BaseException as exc:  # the host decides; the agent goes on serving
            text = "".join(traceback.format_exception_only(exc)).strip()
            try:
                reply = ("error", pickle.dumps(exc), text)
            except Exception:
                reply = ("error", b"", text)
        channel.send(reply)


def power_off() -> None:
    os.sync()
    ctypes.CDLL(None, use_errno=True).reboot(LINUX_REBOOT_CMD_POWER_OFF)


def agent_port(ports: Path = Path("/sys/class/virtio-ports")) -> str:
    """The device of the virtio serial port the host's socket is wired to."""
    for name in ports.glob("*/name"):
        if name.read_text().strip() == AGENT_PORT:
            return f"/dev/{name.parent.name}"
    raise RuntimeError(f"no virtio serial port named {AGENT_PORT} in {ports}")


def main(argv: list[str]) -> None:
    vm = argv[1] == "--vm"
    directory = Path(argv[-1])
    try:
        if vm:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(agent_port(), os.O_RDWR | os.O_NOCTTY)
        else:
            fd = os.open(CHANNEL, os.O_RDWR | os.O_NOCTTY)
            tty.setraw(fd)
        channel = Channel(fd, fd)
        agent = Agent(directory, channel, vm)
        try:
            channel.send(("ready", agent.facts))
            serve(channel, agent)
        finally:
            agent.teardown()
    except BaseException:
        traceback.print_exc()
    finally:
        power_off()


if __name__ == "__main__":
    main(sys.argv)
