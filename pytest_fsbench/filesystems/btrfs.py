"""Btrfs: multi-device profiles (-m X -d X) made by mkfs.btrfs itself."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import ClassVar

from ..case import CaseSpec
from .base import MKFS_OPT, MOUNT_OPT, NOT_MOUNTED, Argv, BuildContext, Filesystem, OptionSpec, Step
from .base import matches, mount_option_list

_COMPRESS = r"(no|none|zlib(:[1-9])?|lzo|zstd(:([1-9]|1[0-5]))?)"
COMPRESS_HELP = "zlib[:1-9], lzo, zstd[:1-15] or no"
#: what `btrfs device scan --forget` says of a device the kernel no longer holds: nothing to forget
#: (Debian's 6.1 drops a single-device filesystem's device at its last unmount, and udev may
#: or may not have scanned it again since)
NOT_REGISTERED = ("No such file or directory",)


@dataclass(frozen=True)
class Btrfs(Filesystem):
    name: ClassVar[str] = "btrfs"
    kernel_name: ClassVar[str] = "btrfs"
    commit_counter: ClassVar[str] = "btrfs"
    tools: ClassVar[dict[str, str]] = {"mkfs.btrfs": "btrfs-progs", "btrfs": "btrfs-progs"}
    version_argv: ClassVar[Argv] = ("mkfs.btrfs", "--version")
    copy_on_write: ClassVar[bool] = True
    options: ClassVar[dict[str, OptionSpec]] = {
        "mkfs": MKFS_OPT,
        "mount": MOUNT_OPT,
        "compress": OptionSpec("mount -o compress=ALG", matches(_COMPRESS, COMPRESS_HELP)),
        "compress-force": OptionSpec("mount -o compress-force=ALG", matches(_COMPRESS, COMPRESS_HELP)
        ),
    }
    alternatives: ClassVar[dict[str, str]] = {"compress-force": "compress"}
    rank: ClassVar[int] = 2

    def plan(self, spec: CaseSpec, ctx: BuildContext) -> list[Step]:
        user_args = shlex.split(spec.option("mkfs") or "")
        profile = spec.layout  # btrfs names its profiles like the layouts: single, raid0, ...
        mkfs: Argv = (
            "mkfs.btrfs", "-f", "-L", ctx.name, "-m", profile, "-d", profile, *user_args,
            *ctx.devices,
        )
        forget: Argv = ("btrfs", "device", "scan", "--forget", *ctx.devices)
        return [
            Step(mkfs, (forget,), NOT_REGISTERED),
            Step(self.mount_argv(spec, ctx), (("umount", ctx.mountpoint),), NOT_MOUNTED),
        ]

    def mount_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv:
        # device= names every member, so the mount works without a udev-driven device scan
        pairs: list[tuple[str, str | None]] = [("device", dev) for dev in ctx.devices]
        for key in ("compress", "compress-force"):
            if spec.option(key):
                pairs.append((key, spec.option(key)))
        opts = mount_option_list(spec, *pairs)
        return ("mount", "-t", "btrfs", "-o", ",".join(opts), ctx.devices[0], ctx.mountpoint)

    def compression_argv(self, spec: CaseSpec, ctx: BuildContext) -> Argv | None:
        """compsize of fsbench's files, when the case compresses (compress, compress-force, or a
        compress mount option); an uncompressed case is not scanned after every run."""
        options = dict(spec.options)
        compresses = any(options.get(k, "no") != "no" for k in ("compress", "compress-force")) or \
            "compress" in options.get("mount", "")
        return ("compsize", "-b", f"{ctx.mountpoint}/fsbench") if compresses else None

    def parse_compression(self, output: str) -> float:
        """Uncompressed / disk usage from compsize's TOTAL line (bytes, with -b)."""
        for line in output.splitlines():
            fields = line.split()
            if fields[:1] == ["TOTAL"] and len(fields) >= 4:
                return int(fields[3]) / int(fields[2])
        raise ValueError(f"no TOTAL line in compsize output: {output.strip()[:200]}")

    def describe_argvs(self, spec: CaseSpec, ctx: BuildContext) -> dict[str, Argv]:
        return {
            "mount": ("findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", ctx.mountpoint),
            "profiles": ("btrfs", "filesystem", "df", ctx.mountpoint),
        }
