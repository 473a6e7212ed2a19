"""JFS: IBM's journaling filesystem, on one block device or an md array; one of the studies
compared it with the ext family, XFS and Btrfs. Kernels that have it: a guest's (--kernel=uml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Argv
from .kernelfs import MdBackedFilesystem


@dataclass(frozen=True)
class Jfs(MdBackedFilesystem):
    name: ClassVar[str] = "jfs"
    kernel_name: ClassVar[str] = "jfs"
    guest_modules: ClassVar[tuple[str, ...]] = (*MdBackedFilesystem.guest_modules, "jfs")
    rank: ClassVar[int] = 20
    tools: ClassVar[dict[str, str]] = {"mkfs.jfs": "jfsutils"}
    mkfs_argv: ClassVar[Argv] = ("mkfs.jfs", "-q")
    version_argv: ClassVar[Argv] = ("mkfs.jfs", "-V")
