"""Linux md RAID (mdadm) under ext4 and XFS for the raid layouts."""

from __future__ import annotations

from ..case import CaseSpec
from ..system.host import Host
from .base import Argv, BuildContext, Leftover, Step

MD_LEVELS = {"raid0": "0", "raid1": "1", "raid10": "10", "raid5": "5"}
#: the kernel modules of those levels (raid456 has RAID 5), which a guest kernel loads
MD_MODULES = ("raid0", "raid1", "raid10", "raid456")
#: what builds the arrays (program -> package)
MD_TOOLS = {"mdadm": "mdadm"}
#: the arrays a killed session leaves (named after the session, under /dev/md)
MD_LEFTOVERS = (Leftover("md array", ("mdadm", "--stop", "{}"), directory="/dev/md"),)


def md_path(ctx: BuildContext) -> str:
    return f"/dev/md/{ctx.name}"


def md_lacks(spec: CaseSpec, host: Host) -> list[tuple[str, str]]:
    """The md driver, when a raid layout needs it and the kernel has none (a guest kernel can)."""
    if spec.layout not in MD_LEVELS or host.has_md:
        return []
    return [(f"{spec.fs} {spec.layout} needs an md RAID array, and this kernel has no md driver (/proc/mdstat is "
             "absent)", "md (CONFIG_BLK_DEV_MD and its RAID levels)")]


def md_unavailable(spec: CaseSpec, host: Host) -> list[str]:
    if spec.layout not in MD_LEVELS:
        return []
    return [f"{spec.fs} {spec.layout} needs {program} (Debian package {package})"
            for program, package in MD_TOOLS.items() if program not in host.programs]


def md_create_step(spec: CaseSpec, ctx: BuildContext) -> Step:
    """mdadm --create; --assume-clean skips the initial resync, which would otherwise run in the
    background and be measured as part of the filesystem's throughput."""
    devices = list(ctx.devices)
    create: Argv = (
        "mdadm", "--create", md_path(ctx), "--run", "--assume-clean", "--metadata=1.2",
        f"--level={MD_LEVELS[spec.layout]}", f"--raid-devices={len(devices)}", *devices,
    )
    undo: tuple[Argv, ...] = (
        ("mdadm", "--stop", md_path(ctx)),
        ("mdadm", "--zero-superblock", *devices),
    )
    return Step(create, undo)


def block_device(spec: CaseSpec, ctx: BuildContext) -> str:
    """The device the filesystem is made on: the md array for raid layouts, else the disk."""
    return md_path(ctx) if spec.layout in MD_LEVELS else ctx.devices[0]
