"""Size strings: '64K', '16M', '4G' (binary multiples, as dd, mkfs and IOzone mean them), and
'2xRAM', the studies' rule for files too big for the page cache to hold."""

from __future__ import annotations

import re
from pathlib import Path

#: slack for metadata and allocation when estimating how much room a workload needs
MARGIN = 64 << 20

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
_RAM_RULE = re.compile(r"^\s*(\d+)\s*x\s*RAM\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes in '512', '64K', '16M', '4G', '1T' (also '64KiB', '64kb'); ValueError otherwise."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size; use a number with an optional K, M, G or T suffix")
    value = int(match.group(1)) * _UNITS[match.group(2).upper()]
    if value <= 0:
        raise ValueError(f"{text!r} is not a positive size")
    return value


def format_size(nbytes: int) -> str:
    """The shortest exact form: 65536 -> '64K', 1536 -> '1536'."""
    for suffix in ("T", "G", "M", "K"):
        unit = _UNITS[suffix]
        if nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


def human_size(nbytes: int) -> str:
    """An approximate size for messages: 85899345920 -> '80.0G', 1536 -> '1.5K'."""
    for suffix in ("T", "G", "M", "K"):
        if nbytes >= _UNITS[suffix]:
            return f"{nbytes / _UNITS[suffix]:.1f}{suffix}"
    return f"{nbytes}B"


def is_ram_rule(text: str) -> bool:
    """'2xRAM' and the like; ValueError for 0xRAM, which is no size (issue 23: it became '0M')."""
    match = _RAM_RULE.match(text)
    if match and int(match.group(1)) < 1:
        raise ValueError(f"{text!r} is no size; give N x RAM with N of 1 or more, e.g. 2xRAM")
    return bool(match)


def resolve_size(text: str, ram_bytes: int) -> str:
    """'2xRAM' -> that many times RAM, rounded up to whole MiB (e.g. '49152M'); other sizes as given."""
    match = _RAM_RULE.match(text)
    if not match:
        parse_size(text)
        return text.strip()
    mib = -(-int(match.group(1)) * ram_bytes // (1 << 20))
    return f"{mib}M"


def existing_ancestor(path: Path) -> Path:
    """path itself if it exists, else its nearest parent that does (a directory fsbench may make)."""
    return next(p for p in (path, *path.parents) if p.exists())
