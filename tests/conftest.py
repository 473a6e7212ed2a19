"""Shared fixtures for fsbench's own tests."""

from __future__ import annotations

import contextlib
import functools
import json
import re
import os
import shutil
import signal
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_fsbench.targets.cleanup import stale
from pytest_fsbench.system.daemons import serialized
from pytest_fsbench.filesystems import DAEMONS
from pytest_fsbench.system.commands import execute
from pytest_fsbench.measure.progress import unwrap
from pytest_fsbench.views.tables import unstack

DATA = Path(__file__).parent / "data"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root: builds filesystems on loop devices")
    for item in items:
        if item.get_closest_marker("root"):
            item.add_marker(skip)


def load_script(name: str):
    """One of the project's own scripts in scripts/ (not shipped in the package), by its path."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"fsbench_script_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@functools.cache
def uml_boot_failure() -> str | None:
    """Why Debian's UML kernel cannot boot on this machine (it panicked, e.g. on a CPU whose
    register state it cannot save), or None when it boots or is not there to try."""
    from pytest_fsbench.kernels.guest import GuestError, boot_facts
    from pytest_fsbench.kernels.kernel import DEBIAN_UML, Kernel

    if os.geteuid() != 0 or not DEBIAN_UML.exists():
        return None
    with tempfile.TemporaryDirectory(prefix="fsbench-uml-probe-") as directory:
        try:
            boot_facts(Kernel("uml", DEBIAN_UML), Path(directory))
        except GuestError as exc:
            if exc.cause is None:
                raise
            return f"{DEBIAN_UML} does not boot on this machine: it panicked ({exc.cause})"
    return None


@pytest.fixture(scope="module")
def uml_boots() -> None:
    """Skip with the kernel's own words where the UML guest kernel panics at boot."""
    failure = uml_boot_failure()
    if failure:
        pytest.skip(failure)


def fsbench_leftovers(include_live: bool = False) -> list[str]:
    """fsbench's mounts, loops and pools on this machine whose session is gone (what live
    sessions, e.g. another test suite running beside this one, hold is theirs, not a leftover);
    include_live: those of live sessions too."""
    found = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if "fsbench" in line]
    listing = subprocess.run(["losetup", "--json", "--list"], capture_output=True, text=True).stdout
    for entry in json.loads(listing or "{}").get("loopdevices", []):
        if "fsbench-" in (entry.get("back-file") or ""):
            found.append(f"{entry['name']} -> {entry['back-file']}")
    if shutil.which("zpool"):
        pools = serialized(execute, DAEMONS)(["zpool", "list", "-H", "-o", "name"], check=False, timeout=60).stdout
        found += [f"zpool {p}" for p in pools.split() if p.startswith("fsbench-")]
    return [item for item in found if include_live or stale(item.split()[-1] + "-")]


#: the pids of the sessions (pytest processes) the running test started: what they leave is its to remove
SESSION_PIDS: set[int] = set()
_TOKEN = re.compile(r"fsbench-(\d+-[0-9a-f]{4})-")
RUN_ROOT = Path("/run/fsbench")


def tokens_of(tmp_path: Path, pids: set[int]) -> set[str]:
    """The session tokens (PID-HEX) of what a test made: sessions it started (by pid), and those
    whose images, loop devices or state name a place under its tmp_path."""
    tokens = {d.name for d in RUN_ROOT.glob("*-*") if d.name.split("-")[0] in {str(p) for p in pids}}
    for state_file in RUN_ROOT.glob("*-*/state.json"):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if str(tmp_path) in str(json.loads(state_file.read_text()).get("image_dir", "")):
                tokens.add(state_file.parent.name)
    listing = subprocess.run(["losetup", "--json", "--list"], capture_output=True, text=True, check=False).stdout
    named = [entry.get("back-file") or "" for entry in json.loads(listing or "{}").get("loopdevices", [])]
    named += [str(p) for p in tmp_path.rglob("fsbench-*")] if tmp_path.is_dir() else []
    named += [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if "fsbench-" in line]
    for name in named:
        match = _TOKEN.search(name)
        if match and (str(tmp_path) in name or int(match.group(1).split("-")[0]) in pids):
            tokens.add(match.group(1))
    return tokens


def remove_own_leftovers(tmp_path: Path, pids: set[int]) -> list[str]:
    """Remove what the test's own sessions, once ended, left on the machine (mounts, pools, loop
    devices, images, scratch, run directories, guest kernels), as fsbench cleanup would, touching
    nothing of any other session; what was found."""
    from pytest_fsbench.targets.cleanup import (_commands, find_leftovers, guest_processes, loop_backing_files,
                                                remove_leftovers)

    tokens = {t for t in tokens_of(tmp_path, pids) if stale(f"fsbench-{t}-")}
    if not tokens:
        return []
    run = serialized(execute, DAEMONS)
    found = find_leftovers(run, RUN_ROOT, daemon_roots=())

    def ours(name: object) -> bool:
        return any(f"fsbench-{t}-" in str(name) for t in tokens)

    backing = loop_backing_files(run(["losetup", "--json", "--list"], check=False, timeout=60).stdout)
    found.mounts = [m for m in found.mounts if ours(m)]
    found.made = [(kind, name) for kind, name in found.made if ours(Path(name).name + "-")]  # a pool: fsbench-TOKEN-1
    found.loops = [dev for dev in found.loops if ours(backing.get(dev, ""))]
    found.images = [p for p in found.images if ours(p.name)]
    found.images += [p for p in tmp_path.rglob("fsbench-*.img") if ours(p.name) and p not in found.images]
    found.scratch = [p for p in found.scratch if ours(p.name)]
    found.session_dirs = [d for d in found.session_dirs if d.name in tokens]
    commands = _commands()
    found.guests = [pid for d in found.session_dirs for pid in guest_processes(d, commands)]
    found.memory_groups = [g for g in found.memory_groups if ours(g.name)]
    found.daemons, found.registries, found.unjudged = [], [], []
    lines = found.lines()
    remove_leftovers(found, run, daemon_roots=())
    return lines


@pytest.fixture
def no_leftovers(tmp_path):
    """Asserts that the test leaves nothing of fsbench's mounted, attached or imported; what its own
    sessions left is removed even when it fails (never another session's, which may be running or
    being looked at by its own test beside this one)."""
    before = set(fsbench_leftovers())
    SESSION_PIDS.clear()
    yield
    after = [item for item in fsbench_leftovers() if item not in before]
    removed = remove_own_leftovers(tmp_path, SESSION_PIDS)
    SESSION_PIDS.clear()
    assert not after, f"left behind: {after} (removed: {removed})"


def sigint_default() -> None:
    """For a child the tests interrupt: SIGINT back to its default, so Python in the child turns
    it into KeyboardInterrupt even when this suite runs with SIGINT ignored (as a background job
    of a non-interactive shell does: the child would inherit the ignore)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def interrupted_after(seconds: int):
    """KeyboardInterrupt in this process after seconds (by SIGALRM), as a Ctrl-C raises it in a
    session, wherever the code then waits."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def start_session(args: list[str], cwd: Path) -> subprocess.Popen:
    """pytest in a child process of its own group (its guest kernels run in groups of their own),
    for a test that kills it: SIGINT at its default, output piped."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=sigint_default)
    SESSION_PIDS.add(proc.pid)
    return proc


def sweep() -> str:
    """`fsbench cleanup`, as a user runs it after a killed session; its output."""
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "cleanup"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def gone_soon(still_there, seconds: float = 30) -> bool:
    """Whether still_there() turns false within seconds (processes take a moment to be reaped)."""
    deadline = time.monotonic() + seconds
    while still_there() and time.monotonic() < deadline:
        time.sleep(0.2)
    return not still_there()


@pytest.fixture
def two_disks(tmp_path):
    """Two loop devices standing in for a user's spare disks (fsbench does not make them)."""
    devices = []
    try:
        for i in range(2):
            image = tmp_path / f"disk{i}.img"
            image.write_bytes(b"")
            os.truncate(image, 1 << 30)
            devices.append(subprocess.run(["losetup", "--find", "--show", str(image)],
                                          capture_output=True, text=True, check=True).stdout.strip())
        yield devices
    finally:
        for device in devices:
            subprocess.run(["losetup", "--detach", device], check=False)


def execute_pytest(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """pytest in a child process, as a user would run it; its stdout with each line the session
    wrapped at 120 columns joined again, and each row of a table stacked to fit them on one line
    again, as the tests read what a line says (the raw text is .raw_stdout; test_terminal_lines
    checks the layout itself)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "120"})  # the width, whatever the caller's terminal
    done.raw_stdout = done.stdout
    done.stdout = "\n".join(unstack(unwrap(done.stdout.splitlines()))) + ("\n" if done.stdout.endswith("\n") else "")
    return done


#: the first line of a study plan's command: the pytest beside fsbench's interpreter (.venv/bin/pytest)
PLAN_COMMAND = re.compile(r"plan: (\S*/)?pytest ")


def plan_command(out: str) -> tuple[list[str], list[str]]:
    """(the arguments of the pytest command a study's plan prints, in lines that end in the shell's
    " \\" and continue indented, read as a shell reads them; the plan's other lines, each wrapped
    line joined again)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if PLAN_COMMAND.match(line))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith(" \\"))
    command = " ".join(line.removesuffix(" \\").strip() for line in lines[start:end + 1]).removeprefix("plan: ")
    return shlex.split(command), unwrap(lines[:start] + lines[end + 1:])


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server for this test session (skipped, with the reason, where none
    can be made); PGPASSFILE points at its password for every store and child process."""
    from postgres_server import PostgresServer, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    server = PostgresServer()
    before = os.environ.get("PGPASSFILE")
    try:
        server.start()
        os.environ["PGPASSFILE"] = str(server.passfile)
        yield server
    finally:
        if before is None:
            os.environ.pop("PGPASSFILE", None)
        else:
            os.environ["PGPASSFILE"] = before
        server.stop()


@contextlib.contextmanager
def one_target(tmp_path: Path, spec, kernels: str = "host"):
    """A session of one case with its target built on a loop image, as the plugin builds it (in
    a guest kernel for a spec of one: kernels names it, as --kernel does); skips with the
    driver's own reason when this machine cannot build it."""
    from pytest_fsbench.kernels.probe import probe
    from pytest_fsbench.kernels.kernel import parse_kernels
    from pytest_fsbench.session import FsbenchSession
    from pytest_fsbench.settings import Settings
    from pytest_fsbench.system.commands import execute

    settings = Settings((spec.fs,), (spec.layout,), (spec,), kernels=parse_kernels(kernels),
                        image_dir=tmp_path / "images", image_size=512 << 20)
    session = FsbenchSession(settings, probe(), execute, run_root=tmp_path / "run")
    reasons = session.targets.unavailable(spec)
    if reasons:
        session.close()
        pytest.skip("; ".join(reasons))
    try:
        with session.target(spec) as target:
            yield target
    finally:
        session.close()


def settings_of(host, args=(), **given):
    """Settings as the plugin reads them from the options table: the flags given (by flag, e.g.
    "--fs"), every other option as pytest leaves it untouched, placed on host; args: the command
    line (what was given there rather than in an ini file)."""
    from pytest_fsbench.options import APPEND, FLAG
    from pytest_fsbench.settings import settings_from

    def get(option):
        if option.flag in given:
            return given[option.flag]
        if option.kind == APPEND:
            return []
        if option.kind == FLAG:
            return False
        return option.default if option.ini else None

    return settings_from(get, Path("/tmp"), tuple(args), host=host)
