"""Probe this machine for the facts a Host holds: its kernel and filesystems, md, the OpenZFS
module (its version and the property values it knows), the programs fsbench and its filesystem
drivers need, root, RAM. Gathered once per session (and once in each guest kernel, by its agent).

It sits above the driver registry, since the drivers say which programs they need; host.py, the
facts themselves, sits below it, since the drivers read them."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

import psutil

from ..filesystems import TOOLS
from ..system.host import Host

#: programs fsbench itself needs; the filesystem drivers add theirs (filesystems.TOOLS: mkfs,
#: mdadm, zpool, zfs-fuse, ...)
PROGRAMS = ("losetup", "mount", "umount", "wipefs", "blkid")


def kernel_filesystems(text: str) -> frozenset[str]:
    """Names from /proc/filesystems ('nodev\tproc' and '\text4' lines)."""
    return frozenset(line.split()[-1] for line in text.splitlines() if line.strip())


def openzfs_values(module: Path) -> tuple[tuple[str, str], ...]:
    """The OpenZFS module's own list of the values each dataset property takes (only properties
    with named values have one)."""
    found = []
    for values in sorted((module / "properties.dataset").glob("*/values")):
        try:
            found.append((values.parent.name, values.read_text().strip()))
        except OSError:
            continue
    return tuple(found)


def module_version(module: Path) -> str | None:
    try:
        return (module / "version").read_text().strip() or None
    except OSError:
        return None


def probe(proc: Path = Path("/proc"), sys: Path = Path("/sys")) -> Host:
    fs_text = (proc / "filesystems").read_text()
    zfs = sys / "module" / "zfs"
    return Host(
        kernel=platform.release(),
        filesystems=kernel_filesystems(fs_text),
        programs=frozenset(p for p in (*PROGRAMS, *sorted(TOOLS)) if shutil.which(p)),
        has_md=(proc / "mdstat").exists(),
        zfs_module=zfs.exists(),
        is_root=os.geteuid() == 0,
        ram_bytes=psutil.virtual_memory().total,
        openzfs=module_version(zfs),
        openzfs_values=openzfs_values(zfs),
    )
