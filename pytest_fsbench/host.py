"""Facts about this machine that decide which cases can run, gathered once per session."""

from __future__ import annotations

import os
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path

import psutil

#: programs fsbench itself needs; the filesystem drivers add theirs (filesystems.TOOLS)
PROGRAMS = ("losetup", "mount", "umount", "wipefs", "blkid", "mdadm", "zfs-fuse")


@dataclass(frozen=True)
class Host:
    """What the kernel and PATH offer; pure data so skip decisions are testable."""

    kernel: str
    filesystems: frozenset[str]
    programs: frozenset[str]
    has_md: bool
    zfs_module: bool
    is_root: bool
    ram_bytes: int

    @property
    def zfs_impl(self) -> str | None:
        """'openzfs' when the kernel module is loaded, else 'zfs-fuse' when installed."""
        if self.zfs_module and "zpool" in self.programs:
            return "openzfs"
        if "zfs-fuse" in self.programs and "zpool" in self.programs and "fuse" in self.filesystems:
            return "zfs-fuse"
        return None


def kernel_filesystems(text: str) -> frozenset[str]:
    """Names from /proc/filesystems ('nodev\tproc' and '\text4' lines)."""
    return frozenset(line.split()[-1] for line in text.splitlines() if line.strip())


def driver_tools() -> frozenset[str]:
    from .filesystems import TOOLS  # the drivers import this module

    return TOOLS


def probe(proc: Path = Path("/proc"), sys: Path = Path("/sys")) -> Host:
    fs_text = (proc / "filesystems").read_text()
    return Host(
        kernel=platform.release(),
        filesystems=kernel_filesystems(fs_text),
        programs=frozenset(p for p in (*PROGRAMS, *sorted(driver_tools())) if shutil.which(p)),
        has_md=(proc / "mdstat").exists(),
        zfs_module=(sys / "module" / "zfs").exists(),
        is_root=os.geteuid() == 0,
        ram_bytes=psutil.virtual_memory().total,
    )
