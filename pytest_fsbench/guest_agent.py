"""fsbench's agent, the init of a guest kernel (see guest.py): loads the modules fsbench needs
from the UML package's tree, tells the host what the guest offers, then builds, measures and
tears down one target at a time on the host's requests, and powers the guest off when asked
(or when the host is gone). It runs the same drivers, runner and workloads as the host."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import pickle
import shutil
import sys
import traceback
import tty
from pathlib import Path

from .devices import LoopDevices
from .filesystems import GUEST_MODULES, driver
from .guest import Channel, GuestFacts
from .probe import probe
from .kernels import UML_MODULES
from .runner import execute
from .system import run
from .target import Target, build_target

#: what a UML kernel keeps as modules that fsbench may need: loop for the agent's own devices, and
#: what the filesystem drivers declare (md RAID levels, filesystems)
MODULES = ("loop", *GUEST_MODULES)
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
                 if run(["modprobe", "-d", str(root), name], check=False, timeout=60).returncode == 0)


class Agent:
    def __init__(self, directory: Path, channel: Channel) -> None:
        self.directory = directory
        self.channel = channel
        release = os.uname().release
        modules = load_modules(directory, release)
        self.facts = GuestFacts(probe(), release, modules)
        self.stack = contextlib.ExitStack()
        self.target: Target | None = None

    def build(self, spec, image_dir: Path, image_size: int, name: str, scratch: Path):
        if self.target is not None:
            raise RuntimeError("a target is already built in this guest")
        # hostfs, under the images, has no O_DIRECT: the host's page cache stays below the guest's
        provider = LoopDevices(image_dir, image_size, run, direct_io=False)
        # a run measured here empties the host's caches too (below the guest's)
        measure = functools.partial(execute, below=self._empty_host_caches)
        self.target = self.stack.enter_context(
            build_target(spec, driver(spec.fs, self.facts.host), provider, run, self.directory, name, scratch,
                         measure))
        return self.target.manifest, str(self.target.mountpoint), self.target.devices

    def measure(self, workload, cache: str):
        return self._target().measure(workload, run, cache)

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
        return run(argv, check=False, timeout=timeout)

    def teardown(self) -> None:
        self.target = None
        self.stack.close()

    def _target(self) -> Target:
        if self.target is None:
            raise RuntimeError("no target is built in this guest")
        return self.target


def serve(channel: Channel, agent: Agent) -> None:
    handlers = {"build": agent.build, "measure": agent.measure, "free": agent.free, "run": agent.command,
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


def main(argv: list[str]) -> None:
    directory = Path(argv[1])
    try:
        fd = os.open(CHANNEL, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(fd)
        channel = Channel(fd, fd)
        agent = Agent(directory, channel)
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
