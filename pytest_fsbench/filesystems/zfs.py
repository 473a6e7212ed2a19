"""ZFS: a pool per target (stripe, mirror, striped mirrors, raidz1), properties set at creation,
and the log, cache and special vdevs a case's options name (log=single|mirror, cache=single,
special=single|mirror), on devices of the case's own after its layout's.

Two implementations share the zpool/zfs commands: OpenZFS's kernel module, used when it is
loaded, and zfs-fuse (pool version 23), which lacks lz4/zstd, records above 128K and special
vdevs. A value the loaded OpenZFS module does not list for its property (checksum=blake3 before
OpenZFS 2.2) skips the case: the module's own list decides, not a table of versions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ..case import DEVICE_GROUPS, LAYOUT_DEVICES, CaseSpec
from ..system.daemons import PIDFILE, Daemon
from ..system.host import Host
from ..sizes import format_size, parse_size
from .base import Argv, BuildContext, Filesystem, Leftover, OptionSpec, Step, matches, one_of

ZFS_COMPRESSION = r"(on|off|lzjb|gzip(-[1-9])?|zle|lz4|zstd(-([1-9]|1[0-9]))?|zstd-fast(-([1-9]|10|[1-9]0|100|500|1000))?)"
ZFS_CHECKSUMS = ("on", "off", "fletcher2", "fletcher4", "sha256", "sha512", "skein", "edonr", "blake3")
#: dedup's values: a checksum that dedup may use, and whether it compares blocks too (verify)
ZFS_DEDUP = ("on", "off", "verify", "edonr,verify",
             *(f"{c}{v}" for c in ("sha256", "sha512", "skein", "blake3") for v in ("", ",verify")))
#: the OpenZFS release that brought a value, to say which one a case needs (the module's own list
#: decides whether it has the value; this only words the reason)
OPENZFS_SINCE = {"blake3": "2.2", "zstd": "2.0"}
FUSE_COMPRESSION = ("on", "off", "lzjb", "gzip", "zle") + tuple(f"gzip-{n}" for n in range(1, 10))
FUSE_MAX_RECORDSIZE = 128 * 1024
FUSE_MAX_ASHIFT = 13
#: where a case zfs-fuse cannot express runs instead: OpenZFS in a virtual machine
OPENZFS_REMEDY = "run it on OpenZFS in a virtual machine with --kernel=host+vm (or --kernel=vm)"
POOL_PROPERTIES = ("ashift",)
#: zfs-fuse's daemon serves every pool on the machine; without a kstat mount, which would be one
#: more mount to leave behind. It takes zpool and zfs commands one at a time: run at once by two
#: sessions (an export or destroy beside another pool's import or listing) they deadlock it, and
#: every pool's mount then waits for ever
ZFS_FUSE = Daemon("zfs-fuse", start=("zfs-fuse", "--pidfile", PIDFILE, "--no-kstat-mount"),
                  answers=("zpool", "list", "-H"), loses="the pool", serializes=("zpool", "zfs"),
                  directories=("/var/lock",), serves=("zpool", "list", "-H", "-o", "name"))


def _recordsize(value: str) -> None:
    size = parse_size(value)
    if size & (size - 1) or not 512 <= size <= 16 * 1024 * 1024:
        raise ValueError("must be a power of two from 512 to 16M, e.g. 128K")


def _ashift(value: str) -> None:
    if not value.isdigit() or not 9 <= int(value) <= 16:
        raise ValueError("must be a number from 9 to 16 (sector size 2^ashift)")


def _data_vdevs(layout: str, devices: tuple[str, ...]) -> tuple[str, ...]:
    if layout in ("single", "raid0"):
        return devices
    if layout == "raid1":
        return ("mirror", *devices)
    if layout == "raid10":
        half = len(devices) // 2
        return ("mirror", *devices[:half], "mirror", *devices[half:])
    if layout == "raid5":
        return ("raidz1", *devices)
    raise ValueError(f"zfs has no layout {layout}")


def _vdevs(spec: CaseSpec, devices: tuple[str, ...]) -> tuple[str, ...]:
    """The layout's vdevs on its devices, then each log, cache or special vdev the options name on
    the devices after them: `... log mirror D E cache F`."""
    start = LAYOUT_DEVICES[spec.layout]
    vdevs = _data_vdevs(spec.layout, devices[:start])
    for group, count in spec.device_groups():
        members = devices[start:start + count]
        vdevs += (group, *(("mirror",) if count > 1 else ()), *members)
        start += count
    return vdevs


def named_values(text: str) -> bool:
    """Whether the module's list of a property's values names them all ("on | off | gzip-[1-9]"),
    rather than describing them ("512 to 1M, power of 2", "<path> | legacy | none")."""
    return bool(text) and all(re.fullmatch(r"[\w.,:-]+(\[[\w,-]*\])?", part.strip()) for part in text.split("|"))


def expand_values(text: str) -> frozenset[str]:
    """The values the OpenZFS module lists for a property ("on | gzip-[1-9] | sha256[,verify] |
    zstd-fast-[1-10,20]"): a bracket of numbers and ranges is one value per number, any other
    bracket an optional suffix."""
    found: set[str] = set()
    for word in (part.strip() for part in text.split("|")):
        head, bracket, rest = word.partition("[")
        if not bracket:
            found.add(word)
            continue
        inner = rest.rstrip("]")
        if not re.fullmatch(r"[\d,-]+", inner):
            found.update((head, head + inner))
            continue
        for item in inner.split(","):
            low, _, high = item.partition("-")
            found.update(f"{head}{n}" for n in range(int(low), int(high or low) + 1))
    return frozenset(found)


def unknown_values(spec: CaseSpec, host: Host) -> list[str]:
    """Why the case's property values are beyond the OpenZFS module loaded here: each value that
    is not in the module's own list for its property, with the release that brought it where known."""
    where = "the guest's" if spec.in_guest else "this host's"
    version = (host.openzfs or "unknown").split("-")[0]
    reasons = []
    for prop, listed in host.openzfs_values:
        value = spec.option(prop)
        if value is None or not named_values(listed) or value in expand_values(listed):
            continue
        since = next((v for name, v in OPENZFS_SINCE.items() if value.startswith(name)), None)
        said = f"(its {prop} values: {listed})"
        if since:
            reasons.append(f"{prop}={value} needs OpenZFS {since}; {where} is {version} {said}")
        else:
            reasons.append(f"{where} OpenZFS {version} has no {prop}={value} {said}")
    return reasons


def first_partition(device: str) -> str:
    """The first partition's device of a disk: /dev/vda1, /dev/loop0p1, /dev/nvme0n1p1."""
    return f"{device}p1" if device[-1].isdigit() else f"{device}1"


@dataclass(frozen=True)
class Zfs(Filesystem):
    name: ClassVar[str] = "zfs"
    kernel_name: ClassVar[str] = ""  # a module or fuse: checked in unavailable()
    copy_on_write: ClassVar[bool] = True
    #: a killed session's pools (destroyed without -f, as plan's teardown says why)
    leftovers: ClassVar[tuple[Leftover, ...]] = (
        Leftover("zpool", ("zpool", "destroy", "{}"), list_argv=("zpool", "list", "-H", "-o", "name")),)
    tools: ClassVar[dict[str, str]] = {"zpool": "zfsutils-linux or zfs-fuse", "zfs": "zfsutils-linux or zfs-fuse"}
    options: ClassVar[dict[str, OptionSpec]] = {
        "compression": OptionSpec("dataset compression", matches(ZFS_COMPRESSION, "on, off, lzjb, gzip[-1..9], zle, lz4, "
                                                                  "zstd[-1..19] or zstd-fast[-1..10,20..100,500,1000]")),
        "recordsize": OptionSpec("dataset record size", _recordsize, lambda value: format_size(parse_size(value))),
        "ashift": OptionSpec("pool sector size exponent", _ashift),
        "dedup": OptionSpec("deduplication", one_of(*ZFS_DEDUP)),
        "atime": OptionSpec("access time updates", one_of("on", "off")),
        "sync": OptionSpec("synchronous write semantics", one_of("standard", "always", "disabled")),
        "checksum": OptionSpec("block checksum", one_of(*ZFS_CHECKSUMS)),
        "copies": OptionSpec("copies of each block", one_of("1", "2", "3")),
        "primarycache": OptionSpec("ARC use", one_of("all", "none", "metadata")),
        "logbias": OptionSpec("ZIL bias", one_of("latency", "throughput")),
        "xattr": OptionSpec("extended attributes", one_of("on", "off", "sa", "dir")),
        "log": OptionSpec("a separate intent log (SLOG) on devices of its own: none, single or mirror",
                          one_of(*DEVICE_GROUPS["log"])),
        "cache": OptionSpec("a level-2 read cache (L2ARC) on a device of its own: none or single",
                            one_of(*DEVICE_GROUPS["cache"])),
        "special": OptionSpec("a special vdev for metadata on devices of its own (OpenZFS 0.8 on): none, single "
                              "or mirror", one_of(*DEVICE_GROUPS["special"])),
    }
    rank: ClassVar[int] = 3
    daemons: ClassVar[tuple[Daemon, ...]] = (ZFS_FUSE,)
    evict_on_every_run: ClassVar[bool] = True  # the ARC ignores drop_caches: only export/import empties it
    evict_description: ClassVar[str] = "pool export/import"
    zeros_as_holes: ClassVar[bool] = True  # a compressing dataset writes no block for a record of zeros
    impl: str = "openzfs"

    @classmethod
    def for_host(cls, host: Host | None) -> "Zfs":
        """OpenZFS or zfs-fuse, whichever this host has."""
        return cls(impl=(host.zfs_impl if host and host.zfs_impl else "openzfs"))

    def needed_daemons(self) -> tuple[Daemon, ...]:
        """zfs-fuse's daemon; OpenZFS's kernel module needs none."""
        return self.daemons if self.impl == "zfs-fuse" else ()

    def unavailable(self, spec: CaseSpec, host: Host) -> list[str]:
        reasons = super().unavailable(spec, host)
        if spec.in_guest and host.zfs_impl != "openzfs":  # a virtual machine's own OpenZFS module runs it
            return reasons + [
                "ZFS runs under the host's kernel (its OpenZFS module or zfs-fuse daemon is the host's), or in a "
                "virtual machine that loaded OpenZFS (--kernel=vm, after ./fsbench.sh setup --kernel=vm), not in this guest "
                "kernel; run zfs cases with --kernel=host (or --kernel=host+uml) or --kernel=vm"
            ]
        if host.zfs_impl is None:
            return reasons + [
                "no ZFS here: neither the OpenZFS kernel module is loaded nor zfs-fuse "
                "(with the fuse filesystem) is installed"
            ]
        if host.zfs_impl == "zfs-fuse":
            reasons += self._fuse_limits(spec)
        else:
            reasons += unknown_values(spec, host)
        return reasons

    def limits(self, host: Host) -> list[str]:
        if host.zfs_impl != "zfs-fuse":
            return []
        return ["zfs-fuse (pool version 23) has no compression=lz4, zstd, zstd-N or zstd-fast-N (it has on, off, "
                "lzjb, gzip, gzip-1..9 and zle), no recordsize above 128K, no ashift above 13 and no special vdev: "
                "those cases skip, or run on OpenZFS in a virtual machine with --kernel=host+vm; other values it "
                "lacks (xattr=sa, checksum=sha512, ...) are refused before a session measures, when a scratch pool "
                "with them cannot be made"]

    @staticmethod
    def _fuse_limits(spec: CaseSpec) -> list[str]:
        """What zfs-fuse cannot express of the case's options, each with where it runs instead."""
        lacks = []
        compression = spec.option("compression")
        if compression and compression not in FUSE_COMPRESSION:
            lacks.append(f"zfs-fuse (pool version 23) has no compression={compression}; it knows "
                         "on, off, lzjb, gzip, gzip-1..9 and zle")
        recordsize = spec.option("recordsize")
        if recordsize and parse_size(recordsize) > FUSE_MAX_RECORDSIZE:
            lacks.append(f"zfs-fuse supports recordsize up to 128K, not {recordsize}")
        ashift = spec.option("ashift")
        if ashift and int(ashift) > FUSE_MAX_ASHIFT:
            lacks.append(f"zfs-fuse supports ashift up to {FUSE_MAX_ASHIFT}, not {ashift}")
        special = spec.option("special")
        if special and special != "none":
            lacks.append(f"zfs-fuse (pool version 23) has no special vdevs (special={special}); they are "
                         "OpenZFS's (0.8 on)")
        return [f"{text} ({OPENZFS_REMEDY})" for text in lacks]

    def create_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv:
        # cachefile=none: the pool is not remembered, so no later daemon start tries to import it
        argv: Argv = ("zpool", "create", "-f", "-o", "cachefile=none")
        for key, value in spec.options:
            if key in DEVICE_GROUPS:  # vdevs, not properties
                continue
            flag = "-o" if key in POOL_PROPERTIES else "-O"
            argv += (flag, f"{key}={value}")
        return (*argv, "-m", ctx.mountpoint, ctx.name, *_vdevs(spec, ctx.devices))

    def plan(self, spec: CaseSpec, ctx: BuildContext) -> list[Step]:
        # links to the pool's devices let export/import (cache eviction) search only them; OpenZFS
        # puts a whole disk's pool in the partition it makes there, so its link is made too
        devices = [*ctx.devices, *map(first_partition, ctx.devices)] if self.impl == "openzfs" else ctx.devices
        links = [Step(("ln", "-sf", dev, f"{ctx.workdir}/{dev.rsplit('/', 1)[-1]}")) for dev in devices]
        # real devices are wiped (wipefs, which knows ZFS labels) by their provider afterwards;
        # zfs-fuse has no `zpool labelclear`
        # never `destroy -f`: forced while a write is still in flight, it hangs zfs-fuse for every
        # pool it serves; a plain destroy says "busy" instead, and the undo stack tries again.
        # "no such pool": a zfs-fuse daemon that died took the pool with it (cachefile=none)
        destroy = Step(self.create_argv(spec, ctx), (("zpool", "destroy", ctx.name),), ("no such pool",))
        return [*links, destroy]

    def mount_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv:
        return ("zpool", "import", "-o", "cachefile=none", "-d", ctx.workdir, ctx.name)

    def evict_plan(self, spec: CaseSpec, ctx: BuildContext) -> list[Argv]:
        """Export and import the pool: the ARC does not obey drop_caches."""
        return [("zpool", "export", ctx.name), self.mount_argv(spec, ctx)]

    def settle_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv | None:
        """OpenZFS: `zpool sync`, which waits for the pool's open transaction group to reach the
        disks. zfs-fuse has no such command (nor a syncfs of its FUSE mount): a run's fsync commits
        its writes there, and what a run leaves unsynced lands at the pool's next transaction group."""
        return ("zpool", "sync", ctx.name) if self.impl == "openzfs" else super().settle_argv(spec, ctx)

    def commits_counted(self) -> str:
        """OpenZFS's transaction groups (its kstat); zfs-fuse keeps no count fsbench can read."""
        return "zfs-txgs" if self.impl == "openzfs" else ""

    def commits_not_counted(self) -> str:
        return ("zfs-fuse keeps no count of its transaction groups that fsbench can read (OpenZFS's kstat "
                "txgs does: --kernel=vm)")

    def compression_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv | None:
        """The dataset's compressratio, when the case compresses (asking zfs-fuse costs about as
        much as a short run)."""
        if dict(spec.options).get("compression", "off") == "off":
            return None
        return ("zfs", "get", "-H", "-o", "value", "compressratio", ctx.name)

    def parse_compression(self, output: str) -> float:
        """'2.03x' -> 2.03."""
        return float(output.strip().rstrip("x"))

    def describe_argvs(self, spec: CaseSpec, ctx: BuildContext) -> dict[str, Argv]:
        # zfs-fuse (pool version 23) has no sync property, and refused the whole list for it, so
        # nothing of what was applied was recorded
        props = ",".join(p for p in ("compression", "recordsize", "dedup", "atime", "sync", "checksum", "copies",
                                     "primarycache", "logbias", "xattr") if self.impl == "openzfs" or p != "sync")
        version: Argv = ("zfs", "version") if self.impl == "openzfs" else ("zpool", "upgrade", "-v")
        return {
            "properties": ("zfs", "get", "-H", "-o", "property,value,source", props, ctx.name),
            "pool": ("zpool", "status", ctx.name),
            "version": version,
        }
