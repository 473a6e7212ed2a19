"""Building a bisect's kernels: each commit checked out in the bisect's own checkout and built in
one build directory (make O=), so a step recompiles only what its commit changed; the kernel then
copied out, one per commit, which later steps and a resumed bisect boot again without building.

A User-mode Linux kernel (`make ARCH=um linux`) is configured from allnoconfig with what fsbench's
cases need built in (uml.config); a virtual machine's (`make bzImage`) from x86_64's defconfig with
what virtme-ng and the cases need (vm.config). --config's lines are laid over either. ccache
compiles where it is installed."""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CommandError, UsageError
from ..kernels.vm import vng_program
from ..options import special_kind
from ..system.commands import Executor, execute_logged
from .tree import checkout

UML, VM = "uml", "vm"
KINDS = (UML, VM)
FRAGMENT = {UML: Path(__file__).with_name("uml.config"), VM: Path(__file__).with_name("vm.config")}
ARCH = {UML: "um", VM: "x86_64"}
TARGET = {UML: "linux", VM: "bzImage"}
#: where make leaves each kind's kernel in the build directory, and its name in the kernels' store
IMAGE = {UML: Path("linux"), VM: Path("arch/x86/boot/bzImage")}
BUILD_TIMEOUT = 6 * 3600.0
_OPTION = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")


@dataclass(frozen=True)
class Built:
    """One commit's build: the kernel (None: it did not build), the seconds make took, why it
    failed (the build log's error lines), and whether it was a full build (the build directory
    configured anew: every file compiled) or a rebuild of what the commit changed."""

    sha: str
    kernel: Path | None
    seconds: float
    error: str | None
    log: Path
    full: bool = False


@dataclass(frozen=True)
class Layout:
    """A bisect's work directory: its checkout, its one build directory, a kernel per commit."""

    work: Path

    @property
    def source(self) -> Path:
        return self.work / "src"

    @property
    def build(self) -> Path:
        return self.work / "build"

    @property
    def fragment(self) -> Path:
        """The options every kernel of the bisect is built with (fsbench's and --config's)."""
        return self.work / "fsbench.config"

    @property
    def required(self) -> Path:
        """The options a built configuration must have: fsbench's, but where --config sets them
        otherwise."""
        return self.work / "required.config"

    def kernel_dir(self, sha: str) -> Path:
        return self.work / "kernels" / sha

    def kernel(self, sha: str, kind: str) -> Path:
        return self.kernel_dir(sha) / IMAGE[kind].name


def options(text: str) -> dict[str, str]:
    """CONFIG_NAME=value lines of a config or fragment (comments and '# ... is not set' left out)."""
    return {match.group(1): match.group(2) for line in text.splitlines() if (match := _OPTION.match(line.strip()))}


#: larger than any kernel's whole .config (a distribution's is about 300 KB)
MAX_CONFIG_BYTES = 4 * 1024 * 1024
_NOT_SET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$", re.MULTILINE)


def read_config(given: str) -> str:
    """--config's text: a regular file of kernel options, read whole (a FIFO would block, a device
    never end, a binary file is no configuration), UsageError naming it otherwise."""
    where, what = Path(given), f"--config={given}"
    hint = "name a kernel configuration (or a fragment of CONFIG_...=y lines)"
    try:
        mode, size = where.stat().st_mode, where.stat().st_size
    except OSError as exc:
        raise UsageError(f"{what}: {exc.strerror}; {hint}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else special_kind(where) or "a character device"
        raise UsageError(f"{what}: is {kind}, not a file; {hint}")
    if size > MAX_CONFIG_BYTES:
        raise UsageError(f"{what}: {size} bytes, larger than any kernel configuration; {hint}")
    try:
        text = where.read_text()
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what}: not text (byte {exc.start} is no UTF-8); {hint}") from None
    except OSError as exc:
        raise UsageError(f"{what}: {exc.strerror}; {hint}") from None
    if not options(text) and not _NOT_SET.search(text):
        raise UsageError(f"{what}: no CONFIG_...= line in it; {hint}")
    return text


def fragment_text(kind: str, user_config: str = "", virtme: str = "") -> str:
    """The fragment a bisect's kernels are built with: virtme-ng's (a virtual machine's), then
    fsbench's for the kind, then the user's --config lines; a later line wins where it names a
    symbol again (virtme-ng's turns ext4 off, "# CONFIG_EXT4_FS is not set": the cases need it)."""
    parts = [virtme, FRAGMENT[kind].read_text(), user_config]
    return "\n".join(part.rstrip() for part in parts if part.strip()) + "\n"


def required_text(kind: str, user_config: str = "") -> str:
    """fsbench's options the user's --config does not set otherwise: what a built configuration
    must have. Not virtme-ng's: it lists options of many kernel releases (a 6.1 tree has neither
    CONFIG_DRM_VIRTIO_GPU_KMS nor CONFIG_DAX_DRIVER), and a kernel that lacks what it needs does not
    boot, which skips its step saying so."""
    theirs = {*options(user_config), *_NOT_SET.findall(user_config)}  # kconfig's way to say =n, as .config has it
    ours = options(FRAGMENT[kind].read_text())
    return "".join(f"{name}={value}\n" for name, value in ours.items() if name not in theirs)


def prepare(layout: Layout, kind: str, user_config: str, execute: Executor) -> None:
    """The bisect's fragment and required options, written once into its work directory."""
    layout.work.mkdir(parents=True, exist_ok=True)
    virtme = virtme_options(execute) if kind == VM else ""
    layout.fragment.write_text(fragment_text(kind, user_config, virtme))
    layout.required.write_text(required_text(kind, user_config))


def missing(config: str, wanted: dict[str, str]) -> list[str]:
    """The options of wanted the built configuration does not have as asked (a symbol whose
    dependencies are off is dropped by kconfig without a word)."""
    have = options(config)
    return [f"{name}={value}" for name, value in wanted.items() if value != "n" and have.get(name) != value]


def make_argv(layout: Layout, kind: str, *targets: str, jobs: int = 1) -> list[str]:
    argv = ["make", "-C", str(layout.source), f"O={layout.build}", f"ARCH={ARCH[kind]}", f"-j{jobs}"]
    if shutil.which("ccache"):
        argv.append("CC=ccache gcc")
    return argv + list(targets)


def configure(layout: Layout, kind: str, log: Path, execute: Executor) -> None:
    """The build directory's first configuration: allnoconfig (UML) or defconfig (a virtual
    machine) with the bisect's fragment laid over it."""
    layout.build.mkdir(parents=True, exist_ok=True)
    if kind == UML:
        execute_logged(make_argv(layout, kind, "allnoconfig", f"KCONFIG_ALLCONFIG={layout.fragment}"), log,
                       timeout=3600)
        return
    execute_logged(make_argv(layout, kind, "defconfig"), log, timeout=3600)
    config = layout.build / ".config"
    config.write_text(config.read_text() + layout.fragment.read_text())  # a later line wins in kconfig


def configuration_gaps(layout: Layout, kind: str, log: Path, execute: Executor) -> list[str]:
    """The build directory configured for the checked-out commit (the first time from scratch, then
    `make olddefconfig`, which takes the commit's new options at their defaults); the options
    fsbench needs that the configuration lacks."""
    if not (layout.build / ".config").is_file():
        configure(layout, kind, log, execute)
    execute_logged(make_argv(layout, kind, "olddefconfig"), log, timeout=3600)
    return missing((layout.build / ".config").read_text(), options(layout.required.read_text()))


def build_commit(tree: Path, layout: Layout, sha: str, kind: str, jobs: int, execute: Executor) -> Built:
    """Check sha out, build it in the bisect's build directory and copy its kernel out; a commit that
    does not check out, configure or build gives a Built with its error (the bisect skips it)."""
    directory = layout.kernel_dir(sha)
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "build.log"
    log.write_text("")
    start = time.monotonic()
    full = not (layout.build / ".config").is_file()
    try:
        checkout(tree, layout.source, sha, execute)
        gaps = configuration_gaps(layout, kind, log, execute)
        if gaps:
            return Built(sha, None, time.monotonic() - start, "its configuration lacks " + ", ".join(gaps[:6])
                         + " (kconfig dropped them: their dependencies are off; add those to --config)", log, full)
        execute_logged(make_argv(layout, kind, TARGET[kind], jobs=jobs), log, timeout=BUILD_TIMEOUT)
    except CommandError as exc:
        return Built(sha, None, time.monotonic() - start, f"{exc.reason or 'make failed'}: "
                     + " / ".join(failure_lines(exc.output)), log, full)
    kernel = layout.kernel(sha, kind)
    shutil.copy2(layout.build / IMAGE[kind], kernel.with_suffix(".tmp"))
    os.replace(kernel.with_suffix(".tmp"), kernel)
    return Built(sha, kernel, time.monotonic() - start, None, log, full)


def failure_lines(output: str, most: int = 4) -> list[str]:
    """What a failed build said of its failure: the last error lines of its output's tail (make's
    own "***" lines, the compiler's "error:"), else its last lines; make's command line and its
    directory changes left out."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.startswith("$ ")
             and "Entering directory" not in line and "Leaving directory" not in line]
    errors = [line for line in lines if "***" in line or "error" in line.lower()]
    return (errors or lines)[-most:]


def virtme_options(execute: Executor) -> str:
    """The options virtme-ng needs in a kernel it boots, as its own configkernel prints them."""
    program = vng_program()
    configkernel = Path(program).with_name("virtme-configkernel") if program else None
    if configkernel is None or not configkernel.exists():
        raise CommandError(["virtme-configkernel"], None, "", "virtme-ng is not installed (pip install "
                           "'pytest-fsbench[vm]'; ./fsbench.sh setup --kernel=vm installs it)")
    return execute([str(configkernel), "--dry-run", "--arch", "x86_64"], timeout=120).stdout
