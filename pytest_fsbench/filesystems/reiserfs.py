"""ReiserFS (version 3), on one block device or an md array; one of the studies compared it with
the ext family, XFS and Btrfs. Kernels that have it: a guest's (--kernel=uml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Argv
from .kernelfs import MdBackedFilesystem


@dataclass(frozen=True)
class Reiserfs(MdBackedFilesystem):
    name: ClassVar[str] = "reiserfs"
    kernel_name: ClassVar[str] = "reiserfs"
    guest_modules: ClassVar[tuple[str, ...]] = (*MdBackedFilesystem.guest_modules, "reiserfs")
    rank: ClassVar[int] = 21
    tools: ClassVar[dict[str, str]] = {"mkfs.reiserfs": "reiserfsprogs"}
    # -f twice: no question even when the device is a whole disk
    mkfs_argv: ClassVar[Argv] = ("mkfs.reiserfs", "-q", "-f", "-f")
    version_argv: ClassVar[Argv] = ("mkfs.reiserfs", "-V")
