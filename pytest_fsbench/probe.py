"""Probe this machine for the facts a Host holds: its kernel and filesystems, md, the OpenZFS
module, the programs fsbench and its filesystem drivers need, root, RAM. Gathered once per session
(and once in each guest kernel, by its agent).

It sits above the driver registry, since the drivers say which programs they need; host.py, the
facts themselves, sits below it, since the drivers read them."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

import psutil

from .filesystems import TOOLS
from .host import Host

#: programs fsbench itself needs; the filesystem drivers add theirs (filesystems.TOOLS: mkfs,
#: mdadm, zpool, zfs-fuse, ...)
PROGRAMS = ("losetup", "mount", "umount", "wipefs", "blkid")


def kernel_filesystems(text: str) -> frozenset[str]:
    """Names from /proc/filesystems ('nodev\tproc' and '\text4' lines)."""
    return frozenset(line.split()[-1] for line in text.splitlines() if line.strip())


def probe(proc: Path = Path("/proc"), sys: Path = Path("/sys")) -> Host:
    fs_text = (proc / "filesystems").read_text()
    return Host(
        kernel=platform.release(),
        filesystems=kernel_filesystems(fs_text),
        programs=frozenset(p for p in (*PROGRAMS, *sorted(TOOLS)) if shutil.which(p)),
        has_md=(proc / "mdstat").exists(),
        zfs_module=(sys / "module" / "zfs").exists(),
        is_root=os.geteuid() == 0,
        ram_bytes=psutil.virtual_memory().total,
    )
