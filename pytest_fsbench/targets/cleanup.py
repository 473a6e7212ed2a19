"""Find and remove what a killed fsbench session left behind: mounts under its directory, what
the drivers declare their targets make elsewhere (zpools, md arrays), its loop devices, image
files and scratch directories, and a daemon a driver declares (zfs-fuse's) that fsbench started
and no live session uses any more. Only sessions whose process is gone are touched, so a
concurrent session is safe."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ..system import daemons, memory, processes
from ..errors import CommandError
from ..filesystems import DAEMONS, LEFTOVERS, Leftover
from .mounts import mounts_under
from ..system.commands import Executor
from .undo import execute_with_retries

#: fsbench-<pid>-<hex4>: the session token every resource name starts with
_NAME = re.compile(r"fsbench-(\d+)-[0-9a-f]{4}-")
#: the registries of the daemons the drivers declare (daemons.py)
DAEMON_ROOTS = tuple(daemon.root for daemon in DAEMONS)


def _serving_others(root: Path, execute: Executor) -> list[str]:
    """What the daemon whose registry is root serves that is not fsbench's (a user's pool)."""
    declared = {daemon.root: daemon for daemon in DAEMONS}
    return daemons.served_by_others(declared[root], execute) if root in declared else []


def stale(name: str) -> bool:
    """True for an fsbench resource name whose session process is gone."""
    match = _NAME.search(name)
    return bool(match) and not processes.alive(int(match.group(1)))


def session_alive(state: dict) -> bool:
    if state.get("process"):
        return processes.identity_alive(state["process"])
    if str(state.get("pid", "")).isdigit():
        return processes.alive(int(state["pid"]))
    return True  # whose it is cannot be told: it is left alone


def session_state(state_file: Path) -> dict:
    """A session's state file, and what a truncated, damaged or pid-less one still tells (issue
    34: JSONDecodeError, KeyError): its pid, from the session directory's name (PID-HEX)."""
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        state = {}
    state = state if isinstance(state, dict) else {}
    pid = state_file.parent.name.split("-")[0]
    if not state.get("process") and not str(state.get("pid", "")).isdigit() and pid.isdigit():
        state["pid"] = int(pid)
    return state


def loop_backing_files(losetup_json: str) -> dict[str, str]:
    """device -> backing file, from `losetup --json --list`."""
    data = json.loads(losetup_json or "{}")
    return {e["name"]: e.get("back-file") or "" for e in data.get("loopdevices", [])}


@dataclass
class Leftovers:
    mounts: list[str] = field(default_factory=list)
    made: list[tuple[Leftover, str]] = field(default_factory=list)  # the drivers' pools, arrays
    loops: list[str] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)
    scratch: list[Path] = field(default_factory=list)
    daemons: list[int] = field(default_factory=list)
    guests: list[int] = field(default_factory=list)  # processes of a guest kernel whose session is gone
    registries: list[Path] = field(default_factory=list)  # a daemon's registry nobody uses any more
    memory_groups: list[Path] = field(default_factory=list)  # --memory's control groups
    session_dirs: list[Path] = field(default_factory=list)
    #: directories in the run directory whose session cannot be told (a damaged state file, a name that is
    #: no session's): never removed, said (issue 44: "nothing left behind" while one stayed)
    unjudged: list[Path] = field(default_factory=list)

    def empty(self) -> bool:
        return not any(items for kind, items in vars(self).items() if kind != "unjudged")

    def lines(self) -> list[str]:
        lines = []
        for kind, items in vars(self).items():
            if kind == "unjudged":
                continue
            if kind == "made":
                lines += [f"{leftover.kind}: {name}" for leftover, name in items]
            else:
                lines += [f"{kind}: {item}" for item in items]
        return lines


def guest_processes(session_dir: Path, commands: Iterable[tuple[int, list[str]]]) -> list[int]:
    """The pids of guest kernels booted from session_dir: a UML kernel's init is a file in it, a
    virtual machine's QEMU (and virtme-ng, which started it) connect to the agent's socket there.
    A killed session's guest keeps some of its processes alive."""
    init, agent = f"init={session_dir}/", f"path={session_dir}/"
    return [pid for pid, argv in commands if any(arg.startswith(init) or agent in arg for arg in argv)]


def _commands() -> list[tuple[int, list[str]]]:
    return [(p.info["pid"], p.info["cmdline"] or []) for p in psutil.process_iter(["pid", "cmdline"])]


def find_leftovers(execute: Executor, run_root: Path, mountinfo: Path = Path("/proc/self/mountinfo"),
                   daemon_roots: Iterable[Path] = DAEMON_ROOTS) -> Leftovers:
    found = Leftovers()
    image_dirs = {Path("/var/tmp/fsbench")}
    commands = None
    registries = {Path(root) for root in daemon_roots} | {run_root / daemon.program for daemon in DAEMONS}
    for session_dir in sorted(p for p in run_root.iterdir() if p.is_dir()) if run_root.is_dir() else []:
        if session_dir in registries:
            continue
        state = session_state(session_dir / "state.json")  # a session killed before writing it: its name
        if not state.get("process") and not str(state.get("pid", "")).isdigit():
            found.unjudged.append(session_dir)
            continue
        if session_alive(state):
            continue
        if isinstance(state.get("image_dir"), str):
            image_dirs.add(Path(state["image_dir"]))
        found.mounts += mounts_under(session_dir, mountinfo)
        commands = _commands() if commands is None else commands
        found.guests += guest_processes(session_dir, commands)
        found.session_dirs.append(session_dir)
    for root in daemon_roots:
        daemon = daemons.started_pid(root)
        if daemon is not None and not daemons.live_users(root):
            if not _serving_others(root, execute):  # else it is left running for them (issue 44)
                found.daemons.append(daemon)
        elif daemon is None and root.exists() and not daemons.live_users(root):
            found.registries.append(root)  # its daemon is gone too (killed with its sessions)
    found.made = [(leftover, name) for leftover in LEFTOVERS for name in leftover.names(execute)
                  if stale(Path(name).name)]
    listing = execute(["losetup", "--json", "--list"], check=False, timeout=60).stdout
    backing = {dev: back for dev, back in loop_backing_files(listing).items() if stale(Path(back).name)}
    found.loops = list(backing)
    # a session whose state file is gone still names its image directory in its loops' backing files
    image_dirs |= {Path(back.removesuffix(" (deleted)")).parent for back in backing.values()}
    found.images = [p for d in image_dirs if d.is_dir() for p in sorted(d.glob("fsbench-*.img")) if stale(p.name)]
    found.scratch = [p for d in image_dirs if d.is_dir() for pattern in ("fsbench-*-scratch", "fsbench-*-storage")
                     for p in sorted(d.glob(pattern)) if stale(p.name)]  # --storage-rate's backing directories
    found.memory_groups = [p for p in memory.groups() if stale(p.name)]
    return found


def remove_leftovers(found: Leftovers, execute: Executor,
                     daemon_roots: Iterable[Path] = DAEMON_ROOTS) -> list[str]:
    """Remove in dependency order; return the errors (each item is still tried)."""
    errors: list[str] = []

    def attempt(argv: list[str]) -> None:
        try:
            execute_with_retries(execute, argv)
        except CommandError as exc:
            errors.append(str(exc).splitlines()[0])

    for pid in found.guests:  # its loop devices, arrays and mounts were the guest's: gone with it
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for mountpoint in found.mounts:
        # a FUSE mount whose daemon died answers nothing: a lazy unmount detaches it
        if execute(["umount", mountpoint], check=False, timeout=120).returncode != 0:
            attempt(["umount", "--lazy", mountpoint])
    for leftover, name in found.made:
        attempt(leftover.removal(name))
    for loop in found.loops:
        attempt(["losetup", "--detach", loop])
    for root in daemon_roots:
        if root.exists():
            with daemons.locked(root):  # a session may have started using it since it was found
                daemons.stop_if_unused(root, lambda: _serving_others(root, execute))
                daemons.remove_if_unused(root)
    for image in found.images:
        image.unlink(missing_ok=True)
    for scratch in found.scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    for group in found.memory_groups:
        try:
            memory.remove_group(group)
        except OSError as exc:
            errors.append(f"{group}: {exc.strerror}")
        if group.exists():
            errors.append(f"{group}: a process of the killed session still runs in it; not removed")
    for session_dir in found.session_dirs:
        if mounts_under(session_dir):
            errors.append(f"{session_dir} still has mounts; not removed")
        else:
            shutil.rmtree(session_dir, ignore_errors=True)
    return errors


def own_leftovers(execute: Executor, token: str, session_dir: Path, image_dir: Path, kinds: Iterable[Leftover],
                  mountinfo: Path = Path("/proc/self/mountinfo")) -> Leftovers:
    """What one session still has on the machine once its targets are torn down (none, unless a
    teardown was cut short or a signal fell between a step and its undo): mounts under its
    directory, the pools and arrays of the kinds its drivers make, loop devices and images named
    by its token."""
    mine = f"fsbench-{token}-"
    found = Leftovers()
    if session_dir.exists():
        found.mounts = mounts_under(session_dir, mountinfo)
    found.made = [(leftover, name) for leftover in kinds for name in leftover.names(execute)
                  if Path(name).name.startswith(mine)]
    listing = execute(["losetup", "--json", "--list"], check=False, timeout=60).stdout
    found.loops = [dev for dev, back in loop_backing_files(listing).items() if Path(back).name.startswith(mine)]
    found.images = sorted(image_dir.glob(f"{mine}*.img")) if image_dir.is_dir() else []
    return found
