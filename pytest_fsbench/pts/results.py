"""PTS result files (composite.xml) as PTS writes them, read: one Result per test run, one Entry
per system identifier; RawString holds the samples, Value PTS's mean of them; the Software line
names the File-System PTS saw. A PTS run's results become fsbench metrics here (to_metrics).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from ..metrics import Direction, Metric, in_mb_per_s

Source = Path | etree._Element


def _root(source: Source) -> etree._Element:
    """A result file's root element, from its path or from an element already parsed."""
    return etree.parse(str(source)).getroot() if isinstance(source, Path) else source


_FILE_SYSTEM = re.compile(r"File-System: ([^,(]+?)\s*(?:[,(]|$)")


def software_filesystem(composite: Source, system: str) -> str | None:
    """The File-System PTS wrote in the Software line of one system of a result file."""
    for entry in _root(composite).iter("System"):
        if entry.findtext("Identifier") == system:
            match = _FILE_SYSTEM.search(entry.findtext("Software") or "")
            return match.group(1).strip() if match else None
    return None


def names_filesystem(pts_name: str | None, fs: str, stat_type: str) -> bool:
    """Whether PTS's File-System (from `stat -f -c %T` of its install root) names the target's
    filesystem: fsbench's name for it, or the statfs type itself. stat reports every ext* as
    "ext2/ext3", which PTS turns into a guess from the machine's mounts, so for those any ext*
    name is PTS's way of saying it (findmnt, checked beside this, tells them apart)."""
    if pts_name is None:
        return False
    allowed = {fs, stat_type} | ({"ext2", "ext3", "ext4"} if stat_type == "ext2/ext3" else set())
    return pts_name in allowed


@dataclass(frozen=True)
class PtsResult:
    """One Result of a PTS result file, with one system's entry."""

    identifier: str  # the test, e.g. local/fsbench-dd-1.0.0
    title: str
    app_version: str
    description: str
    scale: str
    proportion: str  # HIB or LIB
    value: float
    samples: tuple[float, ...]
    run_seconds: tuple[float, ...]
    arguments: str = ""

    def as_record(self) -> dict[str, object]:
        """What an export needs to describe the result as PTS did (value: PTS's, the mean)."""
        return {"identifier": self.identifier, "title": self.title, "app_version": self.app_version,
                "arguments": self.arguments, "description": self.description, "scale": self.scale,
                "proportion": self.proportion, "value": self.value}


def read_results(composite: Source, system: str) -> list[PtsResult]:
    """The results a PTS result file holds for one system identifier."""
    doc = _root(composite)
    results = []
    for result in doc.iter("Result"):
        for entry in result.iter("Entry"):
            if entry.findtext("Identifier") != system:
                continue
            raw = entry.findtext("RawString") or ""
            value = float(entry.findtext("Value") or "nan")
            # PTS leaves RawString empty when the test ran once: the Value is the one sample
            samples = tuple(float(v) for v in raw.split(":") if v.strip()) or ((value,) if value == value else ())
            extra = json.loads(entry.findtext("JSON") or "{}")
            run_seconds = tuple(float(v) for v in str(extra.get("test-run-times", "")).split(":") if v)
            results.append(PtsResult(
                identifier=result.findtext("Identifier") or "",
                title=result.findtext("Title") or "",
                app_version=result.findtext("AppVersion") or "",
                description=result.findtext("Description") or "",
                scale=result.findtext("Scale") or "",
                proportion=result.findtext("Proportion") or "HIB",
                value=value,
                samples=samples,
                run_seconds=run_seconds,
                arguments=result.findtext("Arguments") or "",
            ))
    return results


def to_metrics(profile: str, results: list[PtsResult], index: int) -> list[Metric]:
    """The index-th sample of each result as fsbench metrics: name pts.<profile without
    "fsbench-">, the PTS description as the `result` parameter, PTS's proportion, and PTS's
    scale, throughput converted to MB/s (IOzone's profile reports MiB/s)."""
    short = profile.removeprefix("fsbench-")
    return [Metric(f"pts.{short}", *in_mb_per_s(r.samples[index], r.scale),
                   Direction.LOWER if r.proportion == "LIB" else Direction.HIGHER, {"result": r.description})
            for r in results if index < len(r.samples)]
