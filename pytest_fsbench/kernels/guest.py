"""Guest kernels: a case built, measured and torn down inside a User-mode Linux kernel.

UML is the Linux kernel built as a program. It boots here in seconds with the host's own root
filesystem (hostfs), so the guest runs the host's tools, Python and fsbench, with its own kernel:
md RAID, jfs and reiserfs where the host kernel has none, or a kernel a developer patched. The
guest's init is fsbench's agent (guest_agent.py); the host speaks to it over a pipe pair wired to
the guest's second console, one request at a time (build, measure, free space, execute, teardown).
Everything the guest makes lives in the guest (loop devices, md arrays, mounts) or in the
session's run and image directories on the host, so a killed guest leaves nothing `fsbench
cleanup` does not remove; the guest dies with the process that started it. A request left without
its answer (interrupted, timed out, or the guest died) stops the guest at once: the agent serves
one request at a time, so the next answer on the channel would be the old request's.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import hashlib
import os
import pickle
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..case import CaseSpec
from ..targets.devices import Device, loop_images
from ..targets.target import stored_spec
from ..errors import FsbenchError
from ..filesystems import Filesystem, driver
from ..system import interrupts
from ..system.host import Host
from .kernel import GUEST_MEMORY, Kernel
from ..measure.run import dataset_files, empty_page_cache
from ..system.commands import Completed, Executor, execute
from ..system.memory import MemoryLimit

BOOT_TIMEOUT = 180.0
REQUEST_MARGIN = 120.0  # on top of a workload's own timeout, for the guest's cache policy and parsing
PR_SET_PDEATHSIG = 1
#: the directory this process imports fsbench from (a checkout, or the environment's packages)
FSBENCH_ROOT = Path(__file__).resolve().parents[2]


class GuestError(FsbenchError):
    """The guest kernel failed: it did not boot, died, stopped answering, or a request failed
    there (the message is the guest's). cause: the console's own words for a kernel that
    panicked, where it said them."""

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def panic_cause(lines: list[str]) -> str | None:
    """The kernel's panic line and the line before it (what went wrong), or None."""
    for index, line in enumerate(lines):
        if "Kernel panic" in line:
            return "; ".join(x.strip() for x in lines[max(0, index - 1):index + 1])
    return None


class Channel:
    """Messages (pickled, base64, one per line) over a pair of file descriptors."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self._buffer = b""

    def send(self, message: object) -> None:
        data = base64.b64encode(pickle.dumps(message)) + b"\n"
        while data:
            data = data[os.write(self.write_fd, data):]

    def receive(self, timeout: float | None = None, alive=lambda: True) -> object:
        """The next message; None at end of file. GuestError when timeout passes or alive() is
        false while waiting."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            if deadline is not None and time.monotonic() > deadline:
                raise GuestError(f"no answer from the guest in {timeout:g}s")
            ready, _, _ = select.select([self.read_fd], [], [], 1.0)
            if not ready:
                if not alive():
                    raise GuestError("the guest kernel exited")
                continue
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return pickle.loads(base64.b64decode(line))


def fsbench_path(root: Path = FSBENCH_ROOT) -> list[str]:
    """What a guest's agent needs in its environment to import the fsbench the host runs: its
    env -i drops the host's PYTHONPATH, and the interpreter's own install may be another
    checkout's. Nothing for an installed package, which the interpreter finds itself."""
    return [] if root.name in ("site-packages", "dist-packages") else [f"PYTHONPATH={root}"]


def init_script(python: str, directory: Path, root: Path = FSBENCH_ROOT) -> str:
    """The guest's init: the kernel filesystems a Linux userland needs, a /run of the guest's own
    (mdadm keeps its map there, which must not land on the host) with the session's run directory
    carried over at its own path, then fsbench's agent."""
    keep = directory.parent
    lines = ["#!/bin/sh", "mount -t proc proc /proc", "mount -t sysfs sysfs /sys",
             "mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev"]
    if Path("/run") in keep.parents:
        lines += ["mkdir /dev/.fsbench-run", f"mount --bind {keep} /dev/.fsbench-run",
                  "mount -t tmpfs -o mode=755 tmpfs /run", f"mkdir -p {keep}",
                  f"mount --move /dev/.fsbench-run {keep}"]
    else:
        lines.append("mount -t tmpfs -o mode=755 tmpfs /run")
    env = shlex.join(["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "LANG=C",
                      "PYTHONDONTWRITEBYTECODE=1", f"HOME={directory}", *fsbench_path(root)])
    lines.append(f"exec env -i {env} {python} -m pytest_fsbench.kernels.guest_agent {directory}")
    return "\n".join(lines) + "\n"


def boot_argv(kernel: Kernel, init: Path, read_fd: int, write_fd: int, memory: str = GUEST_MEMORY) -> list[str]:
    """linux.uml's command line: the host's root read-write through hostfs, init = fsbench's
    agent, console 0 (kernel messages) on the process's stdout, console 1 the request channel."""
    return [str(kernel.path), f"mem={memory}", "root=/dev/root", "rootfstype=hostfs", "rootflags=/", "rw",
            "quiet", f"init={init}", "con=null", "con0=null,fd:1", f"con1=fd:{read_fd},fd:{write_fd}"]


def _die_with_parent() -> None:
    """In the guest's process before exec: the kernel kills it when fsbench's process dies."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass(frozen=True)
class GuestFacts:
    """What a guest kernel offers, as its agent found it at boot."""

    host: Host  # the probe inside the guest: its kernel, filesystems, md, programs
    release: str
    modules: tuple[str, ...]  # the modules its agent loaded
    openzfs: str | None = None  # the OpenZFS version a vm guest loaded (its module's), else None
    memory_cgroup: str | None = None  # its memory control groups' cgroup version (v2 or v1), None: none (--memory)


class Guest:
    """One running guest kernel and its agent; a context manager that always stops it."""

    def __init__(self, kernel: Kernel, directory: Path) -> None:
        self.kernel = kernel
        self.directory = directory
        self.console = directory / "console.log"
        self.process: subprocess.Popen | None = None
        self.channel: Channel | None = None
        self.facts: GuestFacts | None = None
        self.busy_seconds = 0.0  # serving requests
        #: why the guest was stopped in the middle of a request (its channel out of step), else None
        self.lost: str | None = None

    def __enter__(self) -> "Guest":
        try:
            self.boot()
        except BaseException:  # a boot that failed or was interrupted: no __exit__ stops it
            self.stop(at_once=True)
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def boot(self) -> None:
        self.lost = None
        self.directory.mkdir(parents=True, exist_ok=True)
        init = self.directory / "init"
        init.write_text(init_script(sys.executable, self.directory))
        init.chmod(0o755)
        to_guest, from_host = os.pipe()
        to_host, from_guest = os.pipe()
        env = dict(os.environ, TMPDIR="/dev/shm")  # UML's RAM is a file there: memory, not disk
        with open(self.console, "wb") as console:
            self.process = subprocess.Popen(
                boot_argv(self.kernel, init, to_guest, from_guest), stdin=subprocess.DEVNULL, stdout=console,
                stderr=subprocess.STDOUT, pass_fds=(to_guest, from_guest), env=env, start_new_session=True,
                preexec_fn=_die_with_parent)
        os.close(to_guest)
        os.close(from_guest)
        self.channel = Channel(to_host, from_host)
        message = self._receive(BOOT_TIMEOUT, "boot")
        if not (isinstance(message, tuple) and message[0] == "ready"):
            raise self._failed(f"{self.kernel.path} did not start fsbench's agent")
        self.facts = message[1]

    def _alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _console_lines(self) -> list[str]:
        try:
            return self.console.read_text(errors="replace").strip().splitlines()
        except OSError:
            return []

    def _console_tail(self) -> str:
        lines = self._console_lines()
        cause = panic_cause(lines)
        said = f"; it panicked: {cause}" if cause else ""
        return said + ("; its console ended:\n" + "\n".join(lines[-12:]) if lines else "")

    def _failed(self, message: str) -> GuestError:
        return GuestError(message + self._console_tail(), panic_cause(self._console_lines()))

    def _receive(self, timeout: float, what: str) -> object:
        assert self.channel is not None
        try:
            message = self.channel.receive(timeout, self._alive)
        except GuestError as exc:
            raise self._failed(f"guest kernel {self.kernel.label} ({what}): {exc}") from None
        if message is None:
            raise self._failed(f"guest kernel {self.kernel.label} ({what}): it closed the channel")
        return message

    def _send(self, message: tuple, what: str) -> None:
        assert self.channel is not None
        try:
            self.channel.send(message)
        except OSError as exc:  # the guest went away: its end of the channel closed
            raise self._failed(f"guest kernel {self.kernel.label} ({what}): the guest kernel exited ({exc})") from None

    def call(self, op: str, *args: object, timeout: float = REQUEST_MARGIN) -> object:
        """Send one request and return the guest's answer; the guest's own error is raised here
        (as itself when it can be, else as a GuestError with its text). A guest stopped in the
        middle of an earlier request answers nothing more: GuestError, one line."""
        if self.lost is not None:
            raise GuestError(self.lost)
        if self.channel is None or not self._alive():
            raise self._failed(f"guest kernel {self.kernel.label} is not running")
        start = time.monotonic()
        try:
            return self._request(op, args, timeout)
        finally:
            self.busy_seconds += time.monotonic() - start

    def _request(self, op: str, args: tuple, timeout: float) -> object:
        try:
            reply = self._exchange(op, args, timeout)
        except BaseException as exc:  # no answer (interrupted, timed out, died): the agent may still be at it
            self.abandon(op, exc)
            raise
        if reply[0] == "ok":
            return reply[1]
        try:
            error = pickle.loads(reply[1])
        except Exception:  # an exception whose class cannot be rebuilt from its args
            error = GuestError(reply[2])
        raise error

    def _exchange(self, op: str, args: tuple, timeout: float) -> tuple:
        """Send the request and wait for its answer (a measured run's host-caches steps served on the way)."""
        self._send((op, *args), op)
        reply = self._receive(timeout, op)
        while reply == ("host-caches",):  # a measured run in the guest, between its cache policy and command
            empty_page_cache(execute)
            self._send(("done",), op)
            reply = self._receive(timeout, op)
        return reply

    def abandon(self, op: str, exc: BaseException) -> None:
        """Stop the guest at once after its op request went without an answer: the agent may still
        be serving it (one request at a time), so whatever the channel said next would answer the
        wrong request. Later calls fail with why."""
        words = str(exc).strip().splitlines()
        why = type(exc).__name__ + (f": {words[0]}" if words else "")
        self.lost = (f"guest kernel {self.kernel.label} was stopped when its {op} request went unanswered ({why}); "
                     "what it had built is gone with it")
        self.stop(at_once=True)

    def stop(self, at_once: bool = False) -> None:
        """Ask the agent to power the guest off; kill it when it does not (at once: kill it)."""
        if self.process is not None:
            self._end_process(ask=not at_once)
        if self.channel is not None:
            with contextlib.suppress(OSError):
                os.close(self.channel.read_fd)
                os.close(self.channel.write_fd)
            self.channel = None

    def _end_process(self, ask: bool = True) -> None:
        """Ask the agent to power the guest off and wait a minute for it (ask), then end the
        process's whole group (UML's helper processes outlive its main one when that is killed; a
        virtual machine's QEMU is virtme-ng's child)."""
        assert self.process is not None
        asked = False
        if ask and self._alive() and self.channel is not None:
            with contextlib.suppress(OSError, GuestError):
                self.channel.send(("quit",))
                asked = True
        if asked:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)
        group_gone(self.process.pid)
        self.process = None


def group_gone(group: int, timeout: float = 10.0) -> bool:
    """Wait until no process of the group is left (a killed UML's helper processes die a moment
    after its main one, which is all wait() waits for); whether none is left."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


@dataclass
class GuestTarget:
    """A target that lives in a guest kernel: what the host knows of it, and requests to it."""

    spec: CaseSpec
    driver: Filesystem
    guest: Guest
    mountpoint: Path  # in the guest
    devices: tuple[Device, ...]
    manifest: dict[str, object] = field(default_factory=dict)
    scratch: Path | None = None  # the session's scratch, which the guest shares

    def stored_spec(self) -> dict[str, object]:
        return stored_spec(self.spec, self.manifest)

    @property
    def id(self) -> str:
        return self.spec.id

    def measure(self, workload, execute: Executor, cache: str, limit: MemoryLimit | None = None):
        """One measured run in the guest (measurement.measure_run there); its Measurement. The workload's
        data sets are generated here first, into the scratch the guest shares. limit: the run's
        commands go in a memory control group of the guest's own kernel with that limit, recorded
        in the manifest as the host's is."""
        if self.scratch is not None:
            dataset_files(workload, self.scratch)
        phases = len(getattr(workload, "phases", lambda: [workload])())
        timeout = getattr(workload, "timeout", 3600.0) * phases + REQUEST_MARGIN
        if limit is not None and self.guest.facts is not None and self.guest.facts.memory_cgroup is None:
            limit = None  # a workload's own limit (bonnie++'s -r); --memory itself is refused before for this kernel
        memory = None if limit is None else limit.limit
        measurement, record = self.guest.call("measure", workload, cache, memory, timeout=timeout)
        if record is not None:
            self.manifest["memory_limit"] = record
        return measurement

    def free_bytes(self, execute: Executor | None = None) -> int:
        """Bytes free on the target, as the guest sees them (the host's executor is not used)."""
        return int(self.guest.call("free"))

    def execute(self, argv: list[str], timeout: float = 600.0) -> Completed:
        """A command run in the guest (not checked: look at its returncode)."""
        return self.guest.call("execute", argv, timeout, timeout=timeout + REQUEST_MARGIN)


def boot_facts(kernel: Kernel, directory: Path) -> GuestFacts:
    """Boot the kernel once to learn what it offers."""
    with Guest(kernel, directory) as guest:
        assert guest.facts is not None
        return guest.facts


def kernel_manifest(kernel: Kernel, facts: GuestFacts) -> dict[str, object]:
    """How a guest case's numbers were made, for its manifest."""
    assert kernel.path is not None
    image = kernel.path.read_bytes()
    digest = hashlib.sha256(image).hexdigest()
    return {"runs_under": "uml", "label": kernel.label, "path": str(kernel.path), "release": facts.release,
            "sha256": digest, "build_id": gnu_build_id(image), "memory": GUEST_MEMORY,
            "modules": list(facts.modules),
            "note": "measured in a User-mode Linux guest: compare kernels and configurations with each other, "
                    "not its absolute throughput with a host's"}


#: an ELF note's header for a GNU build id: name size 4, id size 20 (SHA-1), type 3 (NT_GNU_BUILD_ID), "GNU"
GNU_BUILD_ID_NOTE = (4).to_bytes(4, "little") + (20).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"GNU\0"


def gnu_build_id(image: bytes) -> str | None:
    """The kernel's GNU build id (what `readelf -n` shows), read from its ELF note: binutils is not
    among what the bench installs (a fresh machine's UML cases failed for want of readelf)."""
    at = image.find(GNU_BUILD_ID_NOTE)
    return None if at < 0 else image[at + len(GNU_BUILD_ID_NOTE):at + len(GNU_BUILD_ID_NOTE) + 20].hex()


@contextlib.contextmanager
def guest_target(kernel: Kernel, spec: CaseSpec, directory: Path, image_dir: Path, image_size: int, name: str,
                 scratch: Path) -> Iterator[GuestTarget]:
    """A target built in a fresh guest; torn down there and the guest stopped on exit, always."""
    with Guest(kernel, directory) as guest, built_in(guest, spec, image_dir, image_size, name, scratch,
                                                     BOOT_TIMEOUT + 600) as target:
        yield target


@contextlib.contextmanager
def built_in(guest, spec: CaseSpec, image_dir: Path, image_size: int, name: str, scratch: Path,
             build_timeout: float) -> Iterator[GuestTarget]:
    """A target built by a running guest's agent (a UML kernel's or a virtual machine's); torn
    down there on exit, always (the guest itself is its owner's to stop). A guest stopped in the
    middle of a request (Guest.abandon) took the target with it: no teardown is asked of it, and
    the loop images its agent made for the case on the host are removed here."""
    assert guest.facts is not None
    try:
        manifest, mountpoint, devices = guest.call("build", spec, image_dir, image_size, name, scratch,
                                                   timeout=build_timeout)
        target = GuestTarget(spec, driver(spec.fs, guest.facts.host), guest, Path(mountpoint), tuple(devices),
                             manifest, scratch)
        what = f"the teardown of {spec.id} ({name}) in the guest"
        try:
            yield target
        except BaseException as exc:
            if guest.lost is None:
                try:
                    with interrupts.teardown(what):
                        guest.call("teardown", timeout=600)
                except FsbenchError as error:
                    exc.add_note(f"teardown of {spec.id} in the guest also failed: {error}")
            raise
        if guest.lost is None:
            with interrupts.teardown(what):  # a stop signal lets it finish (issue 44)
                guest.call("teardown", timeout=600)
    finally:
        if guest.lost is not None:
            for image in loop_images(image_dir, name, spec.devices_needed):
                image.unlink(missing_ok=True)
