"""The kernel's mount table (/proc/self/mountinfo), parsed once for safety checks and cleanup."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")


@dataclass(frozen=True)
class Mount:
    rdev: int
    target: str
    source: str


def unescape(field: str) -> str:
    """Undo the octal escapes (\\040 for a space) the kernel uses in /proc mount tables."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """Mounts from mountinfo lines:
    'id parent major:minor root target options [optional tags] - fstype source superoptions'."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or ":" not in fields[2]:
            continue
        major, minor = fields[2].split(":", 1)
        source = unescape(tail[1]) if len(tail) > 1 else ""
        mounts.append(Mount(os.makedev(int(major), int(minor)), unescape(fields[4]), source))
    return mounts


def mounts_under(path: Path, mountinfo: Path = MOUNTINFO) -> list[str]:
    """Mount points below path, deepest first (the order to unmount them in)."""
    prefix = str(path).rstrip("/") + "/"
    found = [m.target for m in parse_mountinfo(mountinfo.read_text()) if m.target.startswith(prefix)]
    return sorted(found, key=len, reverse=True)


@dataclass(frozen=True)
class MountOf:
    """The mount a path lives on (findmnt --target)."""

    target: str
    source: str
    fstype: str


FINDMNT_COLUMNS = ("findmnt", "-J", "-o", "TARGET,SOURCE,FSTYPE", "--target")


def parse_findmnt(text: str) -> MountOf:
    """The mount from `findmnt -J -o TARGET,SOURCE,FSTYPE --target PATH`; ValueError otherwise."""
    try:
        [entry] = json.loads(text)["filesystems"]
        return MountOf(entry["target"], entry["source"], entry["fstype"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not findmnt's answer for one path: {text.strip()[:200]!r}") from exc
