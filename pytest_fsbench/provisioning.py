"""Where a session's targets come from: the devices (loop images or real disks), the run
directory their mounts live in, the scratch directory beside the images, the daemons their
drivers declare (zfs-fuse's), shared with other sessions, and the session's virtual machines (one
per vm kernel, kept up for its cases). Builds each case's target and tears it down."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from .system import interrupts, processes
from .case import CaseSpec
from .system.daemons import SharedDaemon
from .targets.devices import BlockDevices, DeviceProvider, LoopDevices, ThrottledLoopDevices
from .filesystems import DAEMONS, driver
from .kernels.guest import GuestError, GuestFacts, boot_facts, built_in, guest_target, kernel_manifest
from .system.host import Host
from .kernels.kernel import Kernel
from .targets.mounts import mounts_under
from .settings import DEFAULT_IMAGE_DIR, Settings
from .measure.run import measure_run, release_datasets
from .system.commands import Executor
from .system.memory import MemoryLimit
from .errors import CommandError, UsageError
from .targets.target import Target, build_target
from .targets.cleanup import own_leftovers, remove_leftovers
from .targets.undo import UndoStack
from .kernels.vm import VmGuest, vm_manifest, vm_missing

log = logging.getLogger("fsbench.targets")
#: the --control device's sparse image: room for its write with some to spare
CONTROL_IMAGE = 256 << 20
#: a preflight target's sparse images: room for any filesystem's smallest (XFS: 300M)
PREFLIGHT_IMAGE = 512 << 20


def memory_refused(kernel: Kernel, facts: GuestFacts) -> str | None:
    """Why --memory cannot apply under a guest kernel (its kernel has no memory control group),
    as the one line that refuses it; None when it can."""
    if facts.memory_cgroup is not None:
        return None
    return (f"--memory with --kernel={kernel.label}: the guest kernel {kernel.path} ({facts.release}) has no memory "
            "control group (neither cgroup v2's memory controller nor v1's), so the limit cannot apply in it; build "
            "it with CONFIG_MEMCG=y, or leave --memory out")


class Targets:
    def __init__(self, settings: Settings, host: Host, execute: Executor, token: str, run_root: Path,
                 started: str) -> None:
        self.settings = settings
        self.host = host
        self.execute = execute
        self.token = token
        self.started = started
        self.session_dir = run_root / token
        # data sets and workload files: on disk beside the images, named so cleanup finds them
        self.scratch = settings.image_dir / f"fsbench-{token}-scratch"
        self.daemons = {daemon.program: SharedDaemon(daemon, execute, token) for daemon in DAEMONS}
        self.kernels = {kernel.label: kernel for kernel in settings.kernels}
        self._guest_facts: dict[str, GuestFacts] = {}
        self._boot_failures: dict[str, GuestError] = {}
        self._control: str | None = None
        self._control_undo = UndoStack(execute, "the removal of --control's device")
        self._kinds: set = set()  # the kinds of things outside the run directory its targets made (pools, arrays)
        self._kernel_manifests: dict[str, dict[str, object]] = {}
        self._vms: dict[str, VmGuest] = {}
        self._booting = 0.0  # the session's time waiting for virtual machines to boot
        self._count = 0
        self.memory = MemoryLimit(settings.memory, token) if settings.memory else None
        self._workload_limits: dict[int, MemoryLimit] = {}  # a workload's own (bonnie++'s -r), by size
        self._throttled: ThrottledLoopDevices | None = None  # the current case's paced storage (--storage-rate)
        # the directories of a named --image-dir this session will make, removed at its end when empty (issue 44:
        # an empty directory was left); never the default one, which every session shares
        made = settings.image_dir
        self._made_dirs = ([] if str(made) == DEFAULT_IMAGE_DIR or made.exists()
                           else [p for p in (made, *made.parents) if not p.exists()])

    def provider(self, spec: CaseSpec | None = None) -> DeviceProvider:
        """Where the case's devices come from: --devices, loop images, or loop images on storage
        paced to the case's --storage-rate."""
        if self.settings.devices:
            sizes = {info.path: info.size_bytes for info in self.settings.device_infos}
            return BlockDevices(self.settings.devices, sizes, self.execute)
        if spec is not None and spec.storage_rate:
            self._prepare_session_dir()
            self._throttled = ThrottledLoopDevices(self.settings.image_dir, self.settings.image_size, self.execute,
                                                   spec.storage_rate, self.session_dir)
            return self._throttled
        return LoopDevices(self.settings.image_dir, self.settings.image_size, self.execute)

    def storage_record(self) -> dict[str, object] | None:
        """The current case's paced storage for its manifest (its rate and what passed through),
        or None when its images are on the image directory's own storage."""
        throttled = self._throttled
        if throttled is None or throttled.storage is None:
            return None
        return throttled.storage.record()

    def control_device(self) -> str:
        """--control's loop device, on a sparse image beside the case images (direct I/O): made at
        its first use, kept for the session, removed by close() (and by fsbench cleanup: its
        names carry the session's token)."""
        if self._control is None:
            self._prepare_session_dir()
            provider = LoopDevices(self.settings.image_dir, CONTROL_IMAGE, self.execute)
            [device] = provider.acquire(1, f"fsbench-{self.token}-control", self._control_undo)
            self._control = device.path
        return self._control

    def guest_facts(self, kernel: Kernel) -> GuestFacts:
        """What a guest kernel offers (booted once per session to find out). A kernel that panics
        at boot is not booted again in this session: GuestError with its cause, every time."""
        if kernel.label in self._boot_failures:
            raise self._boot_failures[kernel.label]
        if kernel.vm:
            try:
                facts = self.vm_guest(kernel).facts
            except GuestError as exc:
                self._boot_failures[kernel.label] = exc  # a boot costs half a minute: not again
                raise
            assert facts is not None
            self._guest_facts[kernel.label] = facts
        if kernel.label not in self._guest_facts:
            self._prepare_session_dir()
            try:
                self._guest_facts[kernel.label] = boot_facts(kernel, self.session_dir / f"probe-{kernel.label}")
            except GuestError as exc:
                if exc.cause is not None:
                    self._boot_failures[kernel.label] = exc
                raise
        return self._guest_facts[kernel.label]

    def vm_guest(self, kernel: Kernel) -> VmGuest:
        """The session's virtual machine of a vm kernel: booted at its first use (the session's
        other vm kernels start booting meanwhile, so a kernel A/B waits for one boot, not two),
        booted again when it died (its case failed with its console's last lines) or was stopped
        in the middle of a request (Guest.abandon), stopped by close()."""
        guest = self._vms.get(kernel.label)
        if guest is not None and guest.ready:
            return guest
        start = time.monotonic()
        try:
            if guest is None or not guest.starting:
                guest = self._start_vm(kernel)
            for other in self.kernels.values():
                if other.vm and other.label not in self._vms and any(s.kernel == other.label
                                                                    for s in self.settings.specs):
                    with contextlib.suppress(GuestError):  # its own cases will say why it cannot start
                        self._start_vm(other)
            try:
                guest.wait()
            except BaseException:
                guest.stop(at_once=True)  # not up: nothing in it to power off
                raise
        finally:
            self._booting += time.monotonic() - start
        return guest

    def _start_vm(self, kernel: Kernel) -> VmGuest:
        self._prepare_session_dir()
        guest = self._vms.get(kernel.label)
        if guest is None:
            guest = VmGuest(kernel, self.session_dir / f"vm-{kernel.label}", self.settings.image_dir,
                            self.settings.image_size, f"fsbench-{self.token}-{kernel.label}", self.scratch,
                            devices=self.settings.devices)
            self._vms[kernel.label] = guest
        guest.stop()  # what is left of a guest that died: its QEMU, its images
        try:
            guest.start()
        except BaseException:
            guest.stop(at_once=True)
            raise
        return guest

    def check_memory(self, specs) -> None:
        """--memory: UsageError when a guest kernel the cases run under has no memory control
        group (each is booted to find out, once per session, as its cases would boot it); a
        kernel that cannot boot is left to its cases, which say why."""
        if self.memory is None:
            return
        for label in dict.fromkeys(spec.kernel for spec in specs if spec.in_guest):
            kernel = self.kernels[label]
            if vm_missing(kernel) if kernel.vm else kernel.missing():
                continue
            try:
                refused = memory_refused(kernel, self.guest_facts(kernel))
            except GuestError:
                continue
            if refused:
                raise UsageError(refused)

    def kernel_manifest(self, kernel: Kernel) -> dict[str, object]:
        """What a guest case's manifest says of its kernel (hashed once per session)."""
        if kernel.label not in self._kernel_manifests:
            if kernel.vm:
                self._kernel_manifests[kernel.label] = vm_manifest(self.vm_guest(kernel), self.execute)
            else:
                self._kernel_manifests[kernel.label] = kernel_manifest(kernel, self.guest_facts(kernel))
        return self._kernel_manifests[kernel.label]

    def guest_notes(self) -> list[str]:
        """What the summary says of the guest kernels this session booted."""
        notes = []
        for label, facts in self._guest_facts.items():
            kernel = self.kernels[label]
            if not kernel.vm:
                notes.append(f"{label}-*: measured in a User-mode Linux guest kernel ({kernel.path}, {facts.release}):"
                             " compare kernels and configurations with each other, not its absolute throughput with "
                             "a host's")
                continue
            guest = self._vms[label]
            zfs = f", OpenZFS {facts.openzfs}" if facts.openzfs else ""
            if guest.accel == "tcg":
                how = ("EMULATED: QEMU emulates the CPU (TCG, no usable KVM here); compare kernels and "
                       "configurations with each other, never with the host's or a KVM guest's numbers")
            else:
                how = "under KVM: compare with other KVM guests, not with the host's numbers"
            notes.append(f"{label}-*: measured in a virtual machine ({kernel.path}, {facts.release}{zfs}) {how}; "
                         f"{guest.boots} boot(s), the last took {guest.boot_seconds or 0:.0f} s; up and idle (no "
                         f"request) {guest.idle_seconds():.0f} s")
        return notes

    @property
    def booting_seconds(self) -> float:
        """The session's time so far waiting for its virtual machines to boot: a cost of the
        session (one boot per vm kernel, again only for a guest that died), though it falls in the
        case that first asks for the machine; the estimate of the time left counts it once."""
        return self._booting

    def guest_times(self) -> dict[str, float]:
        """The session's time spent booting virtual machines (none: no entry), for its time line."""
        if not self._vms:
            return {}
        return {"booting guests": self._booting}

    def host_of(self, spec: CaseSpec) -> Host:
        """The machine the case runs on: this one, or its guest kernel."""
        return self.guest_facts(self.kernels[spec.kernel]).host if spec.in_guest else self.host

    def unavailable(self, spec: CaseSpec) -> list[str]:
        """Why this case cannot be built here (empty when it can)."""
        if spec.in_guest:
            kernel = self.kernels[spec.kernel]
            missing = vm_missing(kernel) if kernel.vm else kernel.missing()
            if missing:
                return [missing]
            try:
                self.guest_facts(kernel)
            except GuestError as exc:
                if exc.cause is None:
                    raise
                if kernel.vm:
                    return [f"the virtual machine of kernel {kernel.label} ({kernel.path}) did not boot: "
                            f"{str(exc).splitlines()[0]}"]
                return [f"the guest kernel {kernel.label} ({kernel.path}) does not boot on this machine: it panicked "
                        f"({exc.cause})"]
        host = self.host_of(spec)
        reasons = driver(spec.fs, host).unavailable(spec, host)
        have = self.provider().available()
        if have is not None and have < spec.devices_needed:
            reasons.append(f"{spec.layout} needs {spec.devices_needed} devices and --devices gave {have}")
        return reasons

    def daemons_of(self, spec: CaseSpec) -> list[SharedDaemon]:
        """The daemons this machine runs for the case's target, as its driver declares them (a
        guest's target is the guest's)."""
        if spec.in_guest:
            return []
        return [self.daemons[daemon.program] for daemon in driver(spec.fs, self.host).needed_daemons()]

    def daemon_failure(self, spec: CaseSpec) -> str | None:
        """Why a case failed when a daemon it needs is the cause, else None."""
        for shared in self.daemons_of(spec):
            if not shared.answers():
                return (f"{spec.id}: the {shared.daemon.program} daemon stopped answering during the case "
                        f"(it died or was killed), taking {shared.daemon.loses} with it")
        return None

    def _prepare_session_dir(self) -> None:
        if self.session_dir.exists():
            return
        for _ in range(5):  # another session's close may remove the empty run root meanwhile
            with contextlib.suppress(FileNotFoundError):
                self.session_dir.mkdir(parents=True)
                break
        state = {"pid": os.getpid(), "process": processes.identity(), "token": self.token,
                 "image_dir": str(self.settings.image_dir), "started": self.started}
        (self.session_dir / "state.json").write_text(json.dumps(state))

    @contextlib.contextmanager
    def target(self, spec: CaseSpec, host_manifest: dict[str, object]) -> Iterator[Target]:
        """A freshly built, mounted target for the case; torn down on exit, always."""
        self._prepare_session_dir()
        self._count += 1
        self._throttled = None  # set by provider() for a case on paced storage
        name = f"fsbench-{self.token}-{self._count}"
        if spec.in_guest and self.kernels[spec.kernel].vm:
            kernel = self.kernels[spec.kernel]
            guest = self.vm_guest(kernel)
            with built_in(guest, spec, self.settings.image_dir, self.settings.image_size, name, self.scratch,
                          build_timeout=900) as target:
                target.manifest["host"] = host_manifest
                target.manifest["kernel"] = self.kernel_manifest(kernel)
                yield target
            return
        if spec.in_guest:
            kernel = self.kernels[spec.kernel]
            with guest_target(kernel, spec, self.session_dir / f"guest-{self._count}", self.settings.image_dir,
                              self.settings.image_size, name, self.scratch) as target:
                target.manifest["host"] = host_manifest
                target.manifest["kernel"] = self.kernel_manifest(kernel)
                yield target
            return
        daemons = self.daemons_of(spec)
        for shared in daemons:
            shared.ensure()
        self._kinds.update(driver(spec.fs, self.host).leftovers)
        with build_target(spec, driver(spec.fs, self.host), self.provider(spec), self.execute, self.session_dir, name,
                          self.scratch, measure=measure_run) as target:
            target.manifest["host"] = host_manifest
            try:
                yield target
            finally:
                for shared in daemons:
                    shared.ensure()  # a daemon that died mid-case is restarted, so teardown can run

    def preflight(self, spec: CaseSpec) -> CommandError | None:
        """Build the case's target once on small scratch images with the commands a measured case
        gives its tools, and tear it down: the tool's failure when it rejects them, else None.
        Its names carry the session's token (fsbench cleanup finds them after a kill -9)."""
        self._prepare_session_dir()
        self._count += 1
        for shared in self.daemons_of(spec):
            shared.ensure()
        self._kinds.update(driver(spec.fs, self.host).leftovers)
        provider = LoopDevices(self.settings.image_dir, PREFLIGHT_IMAGE, self.execute)
        try:
            with build_target(spec, driver(spec.fs, self.host), provider, self.execute, self.session_dir,
                              f"fsbench-{self.token}-preflight{self._count}", self.scratch, measure=measure_run):
                return None
        except CommandError as exc:
            return exc

    def run_limit(self, workload_limit: int | None = None) -> MemoryLimit | None:
        """The memory control group a measured run's commands go in: --memory's, else the one a
        workload asks for (bonnie++'s -r), else none."""
        if self.memory is not None or workload_limit is None:
            return self.memory
        if workload_limit not in self._workload_limits:
            self._workload_limits[workload_limit] = MemoryLimit(workload_limit, f"{self.token}-{workload_limit >> 20}M")
        return self._workload_limits[workload_limit]

    def close(self) -> list[str]:
        """Release the daemons (each stopped if nobody else uses it), remove the scratch and run
        directories and --memory's control group. A stop signal meanwhile lets it finish. Returns
        lines for the user: a daemon left running for what else it serves, and what a teardown cut
        short by a second signal left (then the run directory and its state file stay, so that
        `fsbench cleanup` finds all of it, images too)."""
        with interrupts.teardown("the session's end (its daemons, scratch and run directory)", deliver=False):
            return self._close()

    def _close(self) -> list[str]:
        for limit in (self.memory, *self._workload_limits.values()):
            if limit is not None:
                limit.close()
        for guest in self._vms.values():
            guest.stop()
        for error in self._control_undo.unwind():
            log.warning("removing --control's device: %s", error)
        left = self._left_behind()  # before the daemons go: a pool is destroyed through its daemon
        kept = [line for line in (shared.release() for shared in self.daemons.values()) if line]
        release_datasets(self.scratch)
        shutil.rmtree(self.scratch, ignore_errors=True)
        for directory in self._made_dirs if not left else ():
            with contextlib.suppress(OSError):
                directory.rmdir()  # only while empty: another session may use it by now
        if left:
            return [*kept, f"a teardown was cut short and left {', '.join(left)}; once this session has ended, "
                           f"fsbench cleanup removes them (its state stays in {self.session_dir} for it)"]
        if self.session_dir.exists() and not mounts_under(self.session_dir):
            shutil.rmtree(self.session_dir, ignore_errors=True)
            with contextlib.suppress(OSError):
                self.session_dir.parent.rmdir()  # the run root, when no other session has a directory there
        return kept

    def _left_behind(self) -> list[str]:
        """What of this session is still on the machine once its targets are torn down: nothing,
        unless a teardown was cut short (then it is left for fsbench cleanup) or a signal fell
        between a step and its undo (then it is removed here)."""
        if not self._count and self._control is None:
            return []  # nothing was built
        found = own_leftovers(self.execute, self.token, self.session_dir, self.settings.image_dir, self._kinds)
        if not found.empty() and not interrupts.was_cut_short():
            for error in remove_leftovers(found, self.execute, daemon_roots=()):
                log.warning("removing what the session left: %s", error)
            found = own_leftovers(self.execute, self.token, self.session_dir, self.settings.image_dir, self._kinds)
        return found.lines()
