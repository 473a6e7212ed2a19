"""ext4 and XFS: one block device (a disk, or an md array for the raid layouts)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import ClassVar

from ..case import CaseSpec
from ..system.host import Host
from .base import MKFS_OPT, MOUNT_OPT, NOT_MOUNTED, Argv, BuildContext, Filesystem, Leftover, OptionSpec, Step
from .base import mount_option_list
from .md import (MD_LEFTOVERS, MD_LEVELS, MD_MODULES, MD_TOOLS, block_device, md_create_step, md_lacks,
                 md_unavailable)


@dataclass(frozen=True)
class MdBackedFilesystem(Filesystem):
    mkfs_argv: ClassVar[Argv]
    options: ClassVar[dict[str, OptionSpec]] = {"mkfs": MKFS_OPT, "mount": MOUNT_OPT}
    layout_tools: ClassVar[dict[str, str]] = MD_TOOLS
    leftovers: ClassVar[tuple[Leftover, ...]] = MD_LEFTOVERS
    guest_modules: ClassVar[tuple[str, ...]] = MD_MODULES

    def unavailable(self, spec: CaseSpec, host: Host) -> list[str]:
        return super().unavailable(spec, host) + md_unavailable(spec, host)

    def kernel_lacks(self, spec: CaseSpec, host: Host) -> list[tuple[str, str]]:
        return super().kernel_lacks(spec, host) + md_lacks(spec, host)

    def plan(self, spec: CaseSpec, ctx: BuildContext) -> list[Step]:
        steps = [md_create_step(spec, ctx)] if spec.layout in MD_LEVELS else []
        user_args = shlex.split(spec.option("mkfs") or "")
        # the user's mkfs arguments come last so they override the defaults above
        steps.append(Step((*self.mkfs_argv, *user_args, block_device(spec, ctx))))
        steps.append(Step(self.mount_argv(spec, ctx), (("umount", ctx.mountpoint),), NOT_MOUNTED))
        return steps

    def mount_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv:
        opts = mount_option_list(spec)
        argv: Argv = ("mount", "-t", self.kernel_name)
        if opts:
            argv += ("-o", ",".join(opts))
        return (*argv, block_device(spec, ctx), ctx.mountpoint)

    def describe_argvs(self, spec: CaseSpec, ctx: BuildContext) -> dict[str, Argv]:
        return {"mount": ("findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", ctx.mountpoint)}


@dataclass(frozen=True)
class Ext4(MdBackedFilesystem):
    name: ClassVar[str] = "ext4"
    rank: ClassVar[int] = 0
    kernel_name: ClassVar[str] = "ext4"
    commit_counter: ClassVar[str] = "jbd2"
    shows_non_defaults: ClassVar[bool] = True
    tools: ClassVar[dict[str, str]] = {"mkfs.ext4": "e2fsprogs"}
    # lazy init would keep writing inode tables and the journal in the background after
    # mount, and that I/O would be counted against the benchmark
    mkfs_argv: ClassVar[Argv] = (
        "mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0",
    )
    version_argv: ClassVar[Argv] = ("mkfs.ext4", "-V")


@dataclass(frozen=True)
class Xfs(MdBackedFilesystem):
    name: ClassVar[str] = "xfs"
    rank: ClassVar[int] = 1
    kernel_name: ClassVar[str] = "xfs"
    commit_counter: ClassVar[str] = "xfs-log"
    tools: ClassVar[dict[str, str]] = {"mkfs.xfs": "xfsprogs"}
    mkfs_argv: ClassVar[Argv] = ("mkfs.xfs", "-f", "-q")
    version_argv: ClassVar[Argv] = ("mkfs.xfs", "-V")
