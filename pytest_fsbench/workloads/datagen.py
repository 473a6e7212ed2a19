"""Test data of a chosen compressibility, so compression results are not an artefact of zeros.

`DataSpec` is the case parameter: "zeros", "random" (incompressible), or "N%" — each 4 KiB block
is (100-N)% seeded random bytes followed by N% zeros, so a compressor that sees the zeros shrinks
the data by about 100/(100-N) (50% -> about 2x), the same construction as fio's
buffer_compress_percentage. Run as `python -m pytest_fsbench.workloads.datagen` it writes such a file.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..sizes import parse_size

BLOCK = 4096
CHUNK_BLOCKS = 4096  # 16 MiB generated at a time
_PERCENT = re.compile(r"^(\d{1,3})%$")


@dataclass(frozen=True)
class DataSpec:
    """'zeros', 'random' or 'N%' compressible."""

    text: str

    @property
    def zeros(self) -> bool:
        return self.text == "zeros"

    @property
    def percent(self) -> int:
        """How compressible, 0-100 (zeros: 100)."""
        if self.zeros:
            return 100
        if self.text == "random":
            return 0
        return int(self.text[:-1])

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class DataSet:
    """Input data a workload reads: generated once per session (measurement.ensure_datasets)."""

    size: int
    data: str  # zeros, random or N%
    seed: int = 1

    @property
    def filename(self) -> str:
        """Names the data by what makes it what it is, so equal data sets are one file."""
        kind = self.data.replace("%", "pct")
        return f"data-{self.size}-{kind}-seed{self.seed}.dat"


def parse_data(text: str) -> DataSpec:
    """The data in its one spelling: 050% is 50%, and 0% (no block zeroed) is random, the same
    bytes (issue 34: two spellings made two cases of one configuration). 100% stays apart from
    zeros, which dd reads from /dev/zero rather than from a file."""
    text = text.strip()
    match = _PERCENT.match(text)
    if text in ("zeros", "random"):
        return DataSpec(text)
    if match and int(match.group(1)) <= 100:
        return DataSpec(f"{int(match.group(1))}%" if int(match.group(1)) else "random")
    raise UsageError(f"data {text!r}: use zeros, random, or a compressible percentage like 50%")


def block_pattern(percent: int, rng: np.random.Generator, blocks: int) -> bytes:
    """`blocks` 4 KiB blocks, each (100-percent)% random then zeros."""
    random_bytes = BLOCK - BLOCK * percent // 100
    data = np.zeros((blocks, BLOCK), dtype=np.uint8)
    if random_bytes:
        data[:, :random_bytes] = rng.integers(0, 256, size=(blocks, random_bytes), dtype=np.uint8)
    return data.tobytes()


def write_data(path: str, size: int, spec: DataSpec, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    with open(path, "wb") as out:
        left = size
        while left > 0:
            blocks = min(CHUNK_BLOCKS, -(-left // BLOCK))
            chunk = block_pattern(spec.percent, rng, blocks)
            out.write(chunk[:left])
            left -= len(chunk[:left])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_fsbench.workloads.datagen",
                                     description="write a file of chosen compressibility")
    parser.add_argument("--size", required=True, help="e.g. 256M")
    parser.add_argument("--data", required=True, help="zeros, random or N%%")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("output")
    args = parser.parse_args(argv)
    try:
        write_data(args.output, parse_size(args.size), parse_data(args.data), args.seed)
    except (UsageError, ValueError) as exc:
        print(f"datagen: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
