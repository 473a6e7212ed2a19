"""ext2: the ext family without a journal, on one block device (or an md array for the raid
layouts); the baseline that shows what journaling costs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Argv
from .kernelfs import MdBackedFilesystem


@dataclass(frozen=True)
class Ext2(MdBackedFilesystem):
    name: ClassVar[str] = "ext2"
    shows_non_defaults: ClassVar[bool] = True
    kernel_name: ClassVar[str] = "ext2"
    rank: ClassVar[int] = 10
    tools: ClassVar[dict[str, str]] = {"mkfs.ext2": "e2fsprogs"}
    # inode tables written at mkfs time, not in the background while a benchmark runs
    mkfs_argv: ClassVar[Argv] = ("mkfs.ext2", "-F", "-q", "-E", "lazy_itable_init=0")
    version_argv: ClassVar[Argv] = ("mkfs.ext2", "-V")
