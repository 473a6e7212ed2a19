"""What every filesystem driver is: mostly data, plus a pure plan of commands.

A driver never runs anything. `plan()` returns the steps that build a target (each with the
commands that undo it), `evict_plan()` the commands that empty the filesystem's caches by
unmounting and mounting again, and `unavailable()` the human reasons a case cannot run here.
`target.py` executes the plans and keeps the undo stack.

A driver declares all its filesystem needs, so nothing else lists filesystems: the programs (the
host probe looks for them), the kernel modules a guest kernel loads for it (the guest agent loads
them), and the daemons its targets need (provisioning.py starts and shares them, cleanup removes what a
killed session left of them).
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..case import LAYOUT_DEVICES, CaseSpec
from ..system.daemons import Daemon
from ..system.host import Host, uml_installed

Argv = tuple[str, ...]


@dataclass(frozen=True)
class OptionSpec:
    """One `--fs-opt fs:key=value` key: what it means (shown by fsbench doctor) and how its value
    is checked."""

    help: str
    check: Callable[[str], None]
    #: the one spelling of a valid value (None: as given), so that equal values are one case
    canonical: Callable[[str], str] | None = None


@dataclass(frozen=True)
class Step:
    """A command that builds part of a target, and the commands that undo it, in order."""

    argv: Argv
    undo: tuple[Argv, ...] = ()
    gone: tuple[str, ...] = ()  # what an undo command prints when there was nothing left to undo


#: what umount prints for a mount that is not there: a failed mount step has nothing to undo
NOT_MOUNTED = ("not mounted",)


@dataclass(frozen=True)
class BuildContext:
    """Names a plan needs: unique resource name, devices, where to mount, a private directory."""

    name: str
    devices: tuple[str, ...]
    mountpoint: str
    workdir: str


def one_of(*values: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value not in values:
            raise ValueError(f"must be one of {', '.join(values)}")

    return check


def matches(pattern: str, description: str) -> Callable[[str], None]:
    regex = re.compile(pattern)

    def check(value: str) -> None:
        if not regex.fullmatch(value):
            raise ValueError(f"must be {description}")

    return check


def shell_words(value: str) -> None:
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"is not a valid argument list ({exc})") from exc
    if not words:
        raise ValueError("is empty")


def mount_options(value: str) -> None:
    if not value or any(not part or part.isspace() for part in value.split(",")):
        raise ValueError("must be a comma-separated list of mount options, e.g. noatime,nodiratime")
    if "ro" in (part.strip() for part in value.split(",")):  # issue 34: passed preflight, then OSError
        raise ValueError("ro mounts the target read-only, and every workload writes to it; leave ro out")


#: what the kernel shows for every mount unless told otherwise (the VFS's defaults)
VFS_DEFAULTS = ("rw", "relatime")


def _flag(item: str) -> str:
    """A mount option's name without its value or its 'no': nodioread_nolock -> dioread_nolock."""
    name = item.partition("=")[0]
    return name[2:] if name.startswith("no") and len(name) > 2 else name


def mounted_list(asked: str, kernel: dict[str, str], non_defaults: bool) -> str:
    """A mount= list as the kernel applied it: each item as the kernel reports it, its 'no' form
    included (issue 44: dioread_nolock under data=journal runs as nodioread_nolock, and was stored
    as asked); an item it does not report, as asked. non_defaults: the filesystem shows only the
    options that differ from its defaults (ext2/3/4), so every other one it shows was brought by
    the asked ones (data=journal brings nodelalloc), and is added."""
    by_flag = {_flag(item): item for item in kernel.values()}
    items = [kernel.get(item.partition("=")[0]) or by_flag.get(_flag(item), item) for item in asked.split(",")]
    if non_defaults:
        named = {_flag(item) for item in items}
        items += [item for item in kernel.values() if item not in VFS_DEFAULTS and _flag(item) not in named]
    return ",".join(items)


def mounted_options(options: tuple[tuple[str, str], ...], applied: dict[str, str],
                    non_defaults: bool = False) -> dict[str, str] | None:
    """The case's options as the kernel applied them (issue 34: btrfs compress=zstd runs as
    zstd:3, and was stored as asked): each one the mount's OPTIONS column (findmnt's line in
    applied["mount"]) or the dataset's properties (`zfs get -H -o property,value,source` in
    applied["properties"]) reports, in their words; a mount= list item by item (mounted_list;
    non_defaults: the filesystem shows only options that differ from its defaults); an option
    neither reports (mkfs=, ashift, a pool's log, compress=no) as asked. None when neither was
    read."""
    mount, properties = applied.get("mount", ""), applied.get("properties", "")
    kernel: dict[str, str] = {}
    if mount and not mount.startswith("unavailable") and mount.split():
        for item in mount.splitlines()[0].split()[-1].split(","):
            kernel[item.partition("=")[0]] = item
    zfs = {}
    if properties and not properties.startswith("unavailable"):
        zfs = {fields[0]: fields[1] for fields in (line.split("\t") if "\t" in line else line.split()
                                                    for line in properties.splitlines()) if len(fields) >= 2}
    if not kernel and not zfs:
        return None
    found = {}
    for key, value in options:
        if key == "mount":
            found[key] = mounted_list(value, kernel, non_defaults)
        elif key in zfs:
            found[key] = zfs[key]
        elif key in kernel:
            found[key] = kernel[key].partition("=")[2] or value
        else:
            found[key] = value
    return found


MKFS_OPT = OptionSpec("extra arguments of the filesystem's own mkfs, as its manual gives them, e.g. xfs:mkfs='-m crc=1', "
                      "ext4:mkfs='-b 2048'", shell_words)
MOUNT_OPT = OptionSpec("extra mount options, e.g. mount=noatime", mount_options)


@dataclass(frozen=True)
class Leftover:
    """A kind of thing a driver's targets make outside the session's directory (a pool, an array),
    which a killed session leaves behind: how `fsbench cleanup` lists them (a command's output
    lines, or a directory's entries) and removes one (`{}` in remove_argv is its name)."""

    kind: str
    remove_argv: Argv
    list_argv: Argv = ()
    directory: str = ""

    def names(self, execute) -> list[str]:
        """Every such thing on the machine, fsbench's or not (cleanup keeps the stale ones)."""
        if self.directory:
            path = Path(self.directory)
            return [str(p) for p in sorted(path.iterdir())] if path.is_dir() else []
        if not shutil.which(self.list_argv[0]):
            return []
        return execute(list(self.list_argv), check=False, timeout=60).stdout.split()

    def removal(self, name: str) -> list[str]:
        return [name if arg == "{}" else arg for arg in self.remove_argv]


@dataclass(frozen=True)
class Filesystem:
    """Base of the drivers; subclasses set the class attributes and override plan()."""

    name: ClassVar[str]
    kernel_name: ClassVar[str]
    tools: ClassVar[dict[str, str]]  # program -> package that provides it: every case needs them
    #: programs only some layouts need (program -> package), which those cases check themselves
    layout_tools: ClassVar[dict[str, str]] = {}
    #: kernel modules a guest kernel loads for it (User-mode Linux keeps these as modules; a host's
    #: kernel loads what it needs itself)
    guest_modules: ClassVar[tuple[str, ...]] = ()
    #: daemons its targets may need on the machine that builds them; needed_daemons() says which
    daemons: ClassVar[tuple[Daemon, ...]] = ()
    #: what its targets make outside the session's directory, for `fsbench cleanup` to find
    leftovers: ClassVar[tuple[Leftover, ...]] = ()
    options: ClassVar[dict[str, OptionSpec]]
    layouts: ClassVar[frozenset[str]] = frozenset(LAYOUT_DEVICES)
    version_argv: ClassVar[Argv] = ()
    #: rewriting a file in place needs room for a second copy until the old blocks are freed
    copy_on_write: ClassVar[bool] = False
    #: option keys that are alternatives of another (one replaces the other in a --paired variant)
    alternatives: ClassVar[dict[str, str]] = {}
    #: place in the lists of filesystems (--fs help, doctor); lower first
    rank: ClassVar[int] = 100
    #: how evict_caches empties this filesystem's own cache; every cache policy but 'warm' uses it
    #: when drop_caches cannot (ZFS's ARC ignores drop_caches), else only 'remount' does
    evict_on_every_run: ClassVar[bool] = False
    evict_description: ClassVar[str] = "umount/mount"
    #: with compression on, all-zero blocks are stored as holes, which no compression ratio counts
    #: (zeros then show a ratio of about 1)
    zeros_as_holes: ClassVar[bool] = False
    #: the kernel's count of its commits that a run's work counts (measure.work.COMMIT_COUNTERS: jbd2,
    #: xfs-log, btrfs, zfs-txgs), "" for none
    commit_counter: ClassVar[str] = ""
    #: its mount options line shows only what differs from its defaults (ext2/3/4), so every option
    #: it shows beyond the asked ones was brought by them (mounted_list)
    shows_non_defaults: ClassVar[bool] = False

    @classmethod
    def for_host(cls, host: Host | None) -> "Filesystem":
        """The driver as this host runs it (an implementation that differs by host overrides this)."""
        return cls()

    def needed_daemons(self) -> tuple[Daemon, ...]:
        """The daemons this driver's targets need running (an implementation that differs by host
        overrides this)."""
        return self.daemons

    def option_axis(self, key: str) -> str:
        return self.alternatives.get(key, key)

    def check_option(self, key: str, value: str) -> None:
        """Raise ValueError with a one-line reason if key=value is not valid for this fs."""
        spec = self.options.get(key)
        if spec is None:
            known = ", ".join(sorted(self.options))
            raise ValueError(f"{self.name} has no option {key!r}; its options are: {known}")
        try:
            spec.check(value)
        except ValueError as exc:
            raise ValueError(f"{self.name}:{key}={value}: {key} {exc}") from None

    def canonical_value(self, key: str, value: str) -> str:
        """A checked value in its one spelling (zfs recordsize 131072 -> 128K)."""
        spec = self.options[key]
        return spec.canonical(value) if spec.canonical else value

    def routes(self, options: dict[str, str]) -> dict[str, list[str]]:
        """What each of one case's options sets, by the setting (an alternative counts as its key):
        a key's own value, or the same option named inside mount= (issue 34: compress=lzo with
        mount=compress=zstd mounted zstd and was stored as lzo). Two routes to one setting: the
        mount command takes the last."""
        found: dict[str, list[str]] = {}
        for key, value in options.items():
            if key == "mount":
                for part in value.split(","):
                    name = part.partition("=")[0].strip()
                    if name in self.options and name not in ("mkfs", "mount"):
                        found.setdefault(self.option_axis(name), []).append(f"{self.name}:mount={value}")
            elif key != "mkfs":
                found.setdefault(self.option_axis(key), []).append(f"{self.name}:{key}={value}")
        return found

    def unavailable(self, spec: CaseSpec, host: Host) -> list[str]:
        """Reasons this case cannot run on this host (empty when it can)."""
        reasons = []
        if spec.layout not in self.layouts:
            reasons.append(f"{self.name} does not build the {spec.layout} layout (it builds "
                           f"{', '.join(sorted(self.layouts))})")
        if not host.is_root:
            reasons.append("building filesystems needs root (losetup, mkfs, mount); run as root")
        lacks = self.kernel_lacks(spec, host)
        if lacks:  # what a guest kernel brings: one remedy for all of it
            reasons.append("; ".join(text for text, _ in lacks) + "; " + guest_remedy(spec, [need for _, need in lacks]))
        for program, package in self.tools.items():
            if program not in host.programs:
                reasons.append(f"{program} is not installed (Debian package {package})")
        return reasons

    def limits(self, host: Host) -> list[str]:
        """What this filesystem's implementation here cannot do, in option values (a case asking
        for one is skipped, saying so), for fsbench doctor."""
        return []

    def kernel_lacks(self, spec: CaseSpec, host: Host) -> list[tuple[str, str]]:
        """(why, what a kernel must be built with) for each thing the case needs of the kernel
        that this one lacks; a guest kernel can bring them."""
        if self.kernel_name and self.kernel_name not in host.filesystems:
            return [(f"this kernel has no {self.kernel_name} filesystem (/proc/filesystems)", self.kernel_name)]
        return []

    def plan(self, spec: CaseSpec, ctx: BuildContext) -> list[Step]:
        raise NotImplementedError

    def mount_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv:
        raise NotImplementedError

    def evict_plan(self, spec: CaseSpec, ctx: BuildContext) -> list[Argv]:
        """Unmount and mount again: the only way to empty every cache of this filesystem."""
        return [("umount", ctx.mountpoint), self.mount_argv(spec, ctx)]

    def settle_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv | None:
        """The command that writes a run's deferred work to the devices (and commits it) before the
        run's work is counted; None: a syncfs of the target, which the measurement makes itself (a
        command of its own cost more than the syncfs)."""
        return None

    def commits_counted(self) -> str:
        """Its commit counter's kind (commit_counter, as this implementation has it)."""
        return self.commit_counter

    def commits_not_counted(self) -> str:
        """Why no commit of it is counted, when commits_counted() names no counter."""
        return f"{self.name} keeps no count of its commits that fsbench reads"

    def describe_argvs(self, spec: CaseSpec, ctx: BuildContext) -> dict[str, Argv]:
        """Commands whose output records the options as actually applied (for the manifest)."""
        return {}

    def compression_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv | None:
        """The command that reports the achieved compression ratio (None: no compression)."""
        return None

    def parse_compression(self, output: str) -> float:
        raise NotImplementedError


def guest_remedy(spec: CaseSpec, needs: list[str]) -> str:
    """How to run a case whose kernel lacks what it needs (a kernel filesystem, md): in a guest
    kernel that has it."""
    if spec.in_guest:
        return f"give a guest kernel built with {' and '.join(needs)}"
    if uml_installed():
        return "run it in a guest kernel with --kernel=host+uml (or --kernel=uml)"
    return "install user-mode-linux (Debian package) to run it in a guest kernel with --kernel=host+uml"


def mount_option_list(spec: CaseSpec, *pairs: tuple[str, str | None]) -> list[str]:
    """Mount options from fixed pairs (name, value or None for a flag) plus the user's mount=."""
    opts = [name if value is None else f"{name}={value}" for name, value in pairs]
    user = spec.option("mount")
    if user:
        opts.extend(user.split(","))
    return opts
