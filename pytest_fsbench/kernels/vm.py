"""Guest kernels in a QEMU virtual machine: a real kernel (Debian's packaged one, or a bzImage a
developer built) booted by virtme-ng with this machine's root shared read-only, so the guest runs
the host's tools, Python and fsbench; OpenZFS runs there from its module (built by zfs-dkms for
that kernel) and a userland extracted from its packages, beside the host's zfs-fuse.

One guest per kernel per session: a boot costs 25-35 s under QEMU's emulation, so the guest stays
up for all of that kernel's cases and is booted again only when it died or was stopped (a request
left without its answer stops it at once, Guest.abandon; the next case boots a fresh one). Its
disks are virtio disks on sparse images of the session (QEMU's cache=none keeps the host's page
cache out), wiped and discarded in the guest after each case so the next starts on empty disks; with
--devices, those devices themselves (wiped after each case, as on the host). The host
speaks to fsbench's agent (guest_agent.py, the command virtme-ng runs) over a virtio serial port
wired to a Unix socket in the session's run directory, with the UML guest's protocol. The agent
powers the guest off when that socket closes, so a guest ends with the session that started it;
`fsbench cleanup` ends one a killed session left (found by that socket's path in its command).

KVM is used when the host can run a stock kernel under it (the CPU offers VMX or SVM); otherwise
QEMU emulates the CPU (TCG), and its numbers are labelled emulated: they compare with each other,
never with the host's or a KVM guest's.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..case import MOST_DEVICES
from .guest import FSBENCH_ROOT, Channel, Guest, GuestError, GuestFacts, fsbench_path
from .kernel import GUEST_MEMORY, Kernel, bzimage_release
from ..system.commands import Executor

GUEST_CPUS = 2
#: the most devices a case needs (its layout's, and its ZFS log, cache and special vdevs'): every
#: guest gets that many virtio disks, sparse images that take no room until a case writes them
DISKS = MOST_DEVICES
BOOT_TIMEOUT = 300.0
#: where ./fsbench.sh setup --kernel=vm extracts the OpenZFS userland (zfsutils-linux and its libraries of
#: the zfs-dkms version) so it never displaces the host's zfs-fuse; used only inside a guest
OPENZFS_USERLAND = Path("/var/lib/fsbench/openzfs")
AGENT_PORT = "fsbench.agent"
DISK_SERIAL = "fsbench{}"
CPU_FLAGS_FOR_KVM = ("vmx", "svm")


def accelerator(cpuinfo: str, kvm_device: bool) -> str:
    """kvm when /dev/kvm is there and the CPU offers hardware virtualisation (VMX or SVM), else
    tcg. A KVM without them (a paravirtual one, such as PVM) does not boot a stock kernel."""
    flags = {flag for line in cpuinfo.splitlines() if line.startswith("flags")
             for flag in line.split(":", 1)[1].split()}
    return "kvm" if kvm_device and flags & set(CPU_FLAGS_FOR_KVM) else "tcg"


def detect_accelerator() -> str:
    kvm = os.path.exists("/dev/kvm") and os.access("/dev/kvm", os.R_OK | os.W_OK)
    return accelerator(Path("/proc/cpuinfo").read_text(errors="replace"), kvm)


def vng_program() -> str | None:
    """virtme-ng's vng beside this Python (fsbench's virtual environment), or on PATH."""
    beside = Path(sys.executable).parent / "vng"
    if beside.exists():
        return str(beside)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if directory and (Path(directory) / "vng").exists():
            return str(Path(directory) / "vng")
    return None


def qemu_program() -> str | None:
    for directory in ("/usr/bin", "/usr/local/bin"):
        if (Path(directory) / "qemu-system-x86_64").exists():
            return f"{directory}/qemu-system-x86_64"
    return None


def vm_missing(kernel: Kernel) -> str | None:
    """Why a vm kernel cannot boot here (None when it can)."""
    if vng_program() is None:
        return "virtme-ng is not installed (pip install 'pytest-fsbench[vm]'; ./fsbench.sh setup installs it)"
    if qemu_program() is None:
        return "QEMU is not installed (Debian package qemu-system-x86)"
    if not Path("/bin/busybox").exists() and not Path("/usr/bin/busybox").exists():
        return "busybox is not installed (Debian package busybox-static; virtme-ng builds its boot image with it)"
    return kernel.missing()


def disk_images(image_dir: Path, name: str, count: int = DISKS) -> list[Path]:
    """The guest's disk images, named after the guest (fsbench-TOKEN-LABEL) so fsbench cleanup
    finds a killed session's."""
    return [image_dir / f"{name}-disk{index}.img" for index in range(count)]


def qemu_options(disks: list[Path], sock: Path, passed_through: bool = False) -> list[str]:
    """QEMU's options for the disks (virtio, raw, cache=none: O_DIRECT on the image, so the host's
    page cache holds none of the guest's I/O; discard punches the freed blocks out of a sparse
    image) and the agent's serial port, connected to the host's socket. A passed-through device
    is not discarded (the guest sees no discard, as the host's cases wipe a device and no more)
    and not locked: another kernel's guest of the session opens it too, for cases of its own."""
    options = []
    for index, disk in enumerate(disks):
        extra = "file.locking=off" if passed_through else "discard=unmap"
        options += ["-drive", f"file={disk},if=none,id=fsbench{index},format=raw,cache=none,aio=native,{extra}",
                    "-device", f"virtio-blk-pci,drive=fsbench{index},serial={DISK_SERIAL.format(index)}"]
    return options + ["-chardev", f"socket,id=fsbench-agent,path={sock}", "-device", "virtio-serial-pci",
                      "-device", f"virtserialport,chardev=fsbench-agent,name={AGENT_PORT}"]


def agent_command(python: str, directory: Path, userland: Path = OPENZFS_USERLAND,
                  fsbench_root: Path = FSBENCH_ROOT) -> str:
    """What virtme-ng runs in the guest: fsbench's agent (the host's fsbench: guest.fsbench_path),
    with the OpenZFS userland (when there is one) ahead of the host's programs on PATH."""
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    env = ["LC_ALL=C", "LANG=C", "PYTHONDONTWRITEBYTECODE=1", f"HOME={directory}"]
    env += fsbench_path(fsbench_root)
    if (userland / "sbin" / "zpool").exists():
        path = f"{userland}/sbin:{userland}/usr/sbin:{path}"
        env.append(f"LD_LIBRARY_PATH={userland}/lib/x86_64-linux-gnu")
    return shlex.join(["exec", "env", "-i", f"PATH={path}", *env, python, "-m", "pytest_fsbench.kernels.guest_agent",
                       "--vm", str(directory)])


def vng_argv(vng: str, kernel: Kernel, accel: str, name: str, disks: list[Path], sock: Path, command: str,
             rwdirs: tuple[Path, ...] = (), memory: str = GUEST_MEMORY, cpus: int = GUEST_CPUS,
             passed_through: bool = False) -> list[str]:
    """virtme-ng's command line: the kernel, the host's root read-only (the guest writes to
    overlays of its own), the session's scratch directory writable, the disks and the agent's
    port; --verbose puts the kernel's console on the process's output, which fsbench keeps."""
    argv = [vng, "--run", str(kernel.path), "--name", name, "--memory", memory, "--cpus", str(cpus), "--verbose",
            "--disable-monitor"]
    if accel == "tcg":
        argv.append("--disable-kvm")
    for directory in rwdirs:
        argv.append(f"--rwdir={directory}")
    argv += [f"--qemu-opts={shlex.join(qemu_options(disks, sock, passed_through))}", "--exec", command]
    return argv


class VmGuest(Guest):
    """One guest kernel in a virtual machine, kept up for the session's cases of its kernel; its
    disks are sparse images of its own, or the session's --devices (passed through)."""

    def __init__(self, kernel: Kernel, directory: Path, image_dir: Path, image_size: int, name: str,
                 scratch: Path, accel: str | None = None, devices: tuple[str, ...] = ()) -> None:
        super().__init__(kernel, directory)
        self.image_dir = image_dir
        self.image_size = image_size
        self.name = name
        self.scratch = scratch
        self.accel = accel or detect_accelerator()
        self.devices = devices
        self.images = [] if devices else disk_images(image_dir, name)
        self._socket: socket.socket | None = None
        self._listener: socket.socket | None = None
        self._started_at = 0.0
        self.boot_seconds: float | None = None  # the last boot's
        self.booted_at: float | None = None
        self.boots = 0
        self.booting_seconds = 0.0  # every boot's, failed ones too
        self.up_seconds = 0.0  # up after its boots, until stopped (the current one's not yet counted)
        self.broken = False  # its channel failed (it died, or stopped answering): boot it again

    @property
    def alive(self) -> bool:
        return self._alive() and not self.broken

    def _failed(self, message: str) -> GuestError:
        self.broken = True
        return super()._failed(message)

    @property
    def ready(self) -> bool:
        """Booted, its agent answering, and not broken since."""
        return self.booted_at is not None and self.alive

    @property
    def starting(self) -> bool:
        """Started, its agent not yet answering."""
        return self._listener is not None and self._alive()

    def boot(self) -> None:
        self.start()
        self.wait()

    def start(self) -> None:
        """Start the guest (fresh sparse disk images, QEMU) and return: its boot goes on meanwhile,
        wait() waits for its agent."""
        vng = vng_program()
        if vng is None:
            raise GuestError(vm_missing(self.kernel) or "virtme-ng is not installed")
        self._started_at = time.monotonic()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.image_dir.mkdir(parents=True, exist_ok=True)
        self.scratch.mkdir(parents=True, exist_ok=True)
        for image in self.images:
            with open(image, "wb") as handle:  # fresh and sparse at every boot
                handle.truncate(self.image_size)
        sock_path = self.directory / "agent.sock"
        sock_path.unlink(missing_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(sock_path))
        self._listener.listen(1)
        command = agent_command(sys.executable, self.directory)
        disks = [Path(device) for device in self.devices] or self.images
        argv = vng_argv(vng, self.kernel, self.accel, self.name, disks, sock_path, command, (self.scratch,),
                        passed_through=bool(self.devices))
        (self.directory / "command").write_text(shlex.join(argv) + "\n")
        # vng runs virtme-run, which runs QEMU: they find each other on PATH
        env = dict(os.environ, PATH=f"{Path(vng).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        with open(self.console, "wb") as console:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
                                            env=env, cwd="/", start_new_session=True)
        self.boots += 1
        self.broken = False
        self.lost = None

    def wait(self) -> None:
        """Wait for the started guest's agent to say it is ready (GuestError, with the console's
        last lines, when it does not come up)."""
        assert self._listener is not None
        try:
            try:
                self._socket = self._accept(self._listener)
            finally:
                self._listener.close()
                self._listener = None
            fd = self._socket.fileno()
            self.channel = Channel(fd, fd)
            message = self._receive(BOOT_TIMEOUT, "boot")
            if not (isinstance(message, tuple) and message[0] == "ready"):
                raise self._failed(f"{self.kernel.path} did not start fsbench's agent")
            self.facts = message[1]
        finally:
            self.booting_seconds += time.monotonic() - self._started_at
        self.booted_at = time.monotonic()
        self.boot_seconds = self.booted_at - self._started_at

    def _accept(self, listener: socket.socket) -> socket.socket:
        """QEMU's connection to the agent's socket (it connects as it starts)."""
        listener.settimeout(1.0)
        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            try:
                connection, _ = listener.accept()
                connection.settimeout(None)
                return connection
            except TimeoutError:
                if not self._alive():
                    raise self._failed(f"guest kernel {self.kernel.label}: QEMU exited before it started") from None
                if time.monotonic() > deadline:
                    raise self._failed(f"guest kernel {self.kernel.label}: QEMU did not start in "
                                       f"{BOOT_TIMEOUT:g}s") from None

    def idle_seconds(self) -> float:
        """Up (booted, until stopped or now) and serving no request."""
        up = self.up_seconds + (0.0 if self.booted_at is None else time.monotonic() - self.booted_at)
        return max(0.0, up - self.busy_seconds)

    def stop(self, at_once: bool = False) -> None:
        """Ask the agent to power the guest off; kill QEMU when it does not (at once: kill it);
        remove the images."""
        if self.booted_at is not None:
            self.up_seconds += time.monotonic() - self.booted_at
            self.booted_at = None
        if self.process is not None:
            self._end_process(ask=not at_once)
        self.channel = None
        for connection in (self._socket, self._listener):
            if connection is not None:
                connection.close()
        self._socket = self._listener = None
        for image in self.images:
            image.unlink(missing_ok=True)
        (self.directory / "agent.sock").unlink(missing_ok=True)


def vm_boot_facts(kernel: Kernel, directory: Path) -> tuple[GuestFacts, str]:
    """Boot the kernel once in a virtual machine to learn what it offers (fsbench doctor); its
    facts and the accelerator it ran under."""
    guest = VmGuest(kernel, directory, directory / "images", 1 << 30, f"fsbench-doctor-{kernel.label}",
                    directory / "scratch")
    try:
        guest.boot()
        assert guest.facts is not None
        return guest.facts, guest.accel
    finally:
        guest.stop()


def planned_emulation(specs, kernels: tuple[Kernel, ...], accel: str | None = None) -> dict[str, str | None]:
    """Each case id's emulation as this session will measure it (accel: what QEMU uses here,
    asked only when a case runs in a virtual machine)."""
    by_label = {kernel.label: kernel for kernel in kernels}
    found: dict[str, str | None] = {}
    for spec in specs:
        kernel = by_label.get(spec.kernel)
        if kernel is not None and kernel.vm:
            accel = accel or detect_accelerator()
            found[spec.id] = "emulated" if accel == "tcg" else "kvm"
        else:
            found[spec.id] = None
    return found


def vm_manifest(guest: VmGuest, execute: Executor) -> dict[str, object]:
    """How a vm case's numbers were made, for its manifest."""
    kernel = guest.kernel
    assert kernel.path is not None and guest.facts is not None
    image = kernel.path if kernel.path.is_file() else kernel.path / "arch" / "x86" / "boot" / "bzImage"
    data = image.read_bytes() if image.is_file() else b""
    qemu = execute([qemu_program() or "qemu-system-x86_64", "--version"], check=False, timeout=60).stdout
    found = {"runs_under": "vm", "label": kernel.label, "path": str(kernel.path), "release": guest.facts.release,
             "image_release": bzimage_release(data[:0x10000]), "sha256": hashlib.sha256(data).hexdigest(),
             "accelerator": guest.accel, "memory": GUEST_MEMORY, "cpus": GUEST_CPUS,
             "qemu": qemu.splitlines()[0] if qemu else None, "disks": "virtio-blk, cache=none, aio=native",
             "modules": list(guest.facts.modules), "openzfs": guest.facts.openzfs}
    if guest.accel == "tcg":
        found["note"] = ("emulated: measured in a virtual machine whose CPU QEMU emulates (TCG, no KVM here); "
                         "compare kernels and configurations with each other, never with a host's or a KVM "
                         "guest's numbers")
    else:
        found["note"] = "measured in a KVM virtual machine: compare with other KVM guests, not with the host's"
    return found
