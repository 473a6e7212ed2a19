"""Filesystem drivers by name."""

from __future__ import annotations

from ..host import Host
from .base import BuildContext, Filesystem, Step
from .btrfs import Btrfs
from .kernelfs import Ext4, Xfs
from .zfs import Zfs

__all__ = ["BuildContext", "Filesystem", "Step", "driver", "DRIVERS"]

DRIVERS: dict[str, type[Filesystem]] = {"ext4": Ext4, "xfs": Xfs, "btrfs": Btrfs, "zfs": Zfs}


def driver(name: str, host: Host | None = None) -> Filesystem:
    """The driver for a filesystem name; ZFS learns which implementation this host has."""
    if name == "zfs":
        return Zfs(impl=(host.zfs_impl if host and host.zfs_impl else "openzfs"))
    return DRIVERS[name]()
