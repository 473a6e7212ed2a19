"""Facts about this machine that decide which cases can run: pure data, which the filesystem
drivers read (kernels/probe.py gathers them, once per session)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEBIAN_UML = Path("/usr/bin/linux.uml")  # Debian's User-mode Linux kernel (package user-mode-linux)


def uml_installed() -> bool:
    """Whether Debian's User-mode Linux kernel is here (--kernel=uml can boot)."""
    return DEBIAN_UML.is_file() and os.access(DEBIAN_UML, os.X_OK)


def slurm_job(environ: Mapping[str, str]) -> str | None:
    """CLUSTER/JOBID of the Slurm job this process runs in (None outside one): how `fsbench fleet`
    finds the session each node's job recorded."""
    job = environ.get("SLURM_JOB_ID")
    return f"{environ.get('SLURM_CLUSTER_NAME', '')}/{job}" if job else None


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
    openzfs: str | None = None  # the OpenZFS module's version (/sys/module/zfs/version), when loaded
    #: (property, the values the OpenZFS module knows of it, in its own words: "on | off | gzip-[1-9]")
    openzfs_values: tuple[tuple[str, str], ...] = ()

    @property
    def zfs_impl(self) -> str | None:
        """'openzfs' when the kernel module is loaded, else 'zfs-fuse' when installed."""
        if self.zfs_module and "zpool" in self.programs:
            return "openzfs"
        if "zfs-fuse" in self.programs and "zpool" in self.programs and "fuse" in self.filesystems:
            return "zfs-fuse"
        return None

