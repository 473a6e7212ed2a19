"""ext3: ext2 with a journal (no extents, no delayed allocation), on one block device or an md
array; the studies compared it with ext4, XFS and Btrfs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Argv
from .kernelfs import MdBackedFilesystem


@dataclass(frozen=True)
class Ext3(MdBackedFilesystem):
    name: ClassVar[str] = "ext3"
    shows_non_defaults: ClassVar[bool] = True
    kernel_name: ClassVar[str] = "ext3"
    commit_counter: ClassVar[str] = "jbd2"
    rank: ClassVar[int] = 11
    tools: ClassVar[dict[str, str]] = {"mkfs.ext3": "e2fsprogs"}
    # inode tables and the journal written at mkfs time, not in the background while a benchmark runs
    mkfs_argv: ClassVar[Argv] = ("mkfs.ext3", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0")
    version_argv: ClassVar[Argv] = ("mkfs.ext3", "-V")
