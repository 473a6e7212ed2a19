"""Whether a case's runs were disturbed beyond the baseline's (issue 32): what else used the
machine while they ran (cpu.others, disk.others: measure/monitor.py) against what it did while
the baseline's ran. A figure measured beside other work that the baseline did not have says
nothing about the filesystem: the gate calls it inconclusive, never a regression or within
bounds, and names the load in one line.

The rule compares medians over the runs, on what other processes left over: these runs are
disturbed when other processes used at least MIN_POINTS points more of the CPUs than during the
baseline's runs and left them less than 1/LEFT_FACTOR of the CPU they left the baseline's. On this
project's shared VM, already busy while the baseline ran (others' median 85.5% of the CPUs), three
re-runs beside two CPU burners had others' medians of 95, 94 and 92%: a difference in points
alone would not have named them, yet they left the runs 5-8% of the CPUs, not 14.5%, and two of
the three medians fell by half (the third by 13%, leaving 8%: named at 1.5, not at 2). On a
saturated machine a slower tool also leaves others more CPU, so there a real slowdown can be named
disturbed: inconclusive, never a pass.

The disk under the images has no share to leave: its runs are disturbed when other processes
moved at least DISK_FACTOR times the MB/s on it they moved during the baseline's runs, and
DISK_MIN_MBS more. On this project's shared VM other jobs moved 50-950 MB/s on it, and a direct
write beside them (an I/O hog) added 400-900 MB/s; at 50 MB/s more a nodelalloc session on a disk
that writes GB/s (123 MB/s of others' against 58) was named disturbed, which 65 MB/s cannot make
it."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from ..store.results import Series

OTHERS_CPU, OTHERS_DISK = "cpu.others", "disk.others"
#: how many times less of the CPUs (or of the disk's bytes) other processes may leave these runs
#: than they left the baseline's
LEFT_FACTOR = 1.5
#: and by how many points of all CPUs at least their share must have grown
MIN_POINTS = 5.0
#: how many times the MB/s other processes moved on the disk under the images during the
#: baseline's runs they may move during these, and by how many MB/s more at least
DISK_FACTOR = 2.0
DISK_MIN_MBS = 200.0


@dataclass(frozen=True)
class Load:
    """What else used the machine during a case's runs: medians over the runs (None: not recorded)."""

    cpu: float | None  # % of all CPUs other processes used
    disk: float | None  # MB/s other processes moved on the disk under the images


def load_of(series: Iterable[Series]) -> Load:
    """The load over the runs of a case's series (of one session or several): the medians of all
    their runs."""
    found: dict[str, list[float]] = {OTHERS_CPU: [], OTHERS_DISK: []}
    for s in series:
        if s.key.metric in found and s.key.params == "{}":
            found[s.key.metric] += s.values
    cpu, disk = found[OTHERS_CPU], found[OTHERS_DISK]
    return Load(statistics.median(cpu) if cpu else None, statistics.median(disk) if disk else None)


def disturbed(mine: Load, theirs: Load) -> str | None:
    """The line saying these runs were disturbed beyond the baseline's, or None when they were not
    (or nothing was recorded during them). A baseline with no record of its load counts as quiet."""
    reasons = []
    if mine.cpu is not None and busier(mine.cpu, theirs.cpu):
        reasons.append(f"other processes used {mine.cpu:.0f}% of the CPUs during these runs, "
                       + _theirs(mine.cpu, theirs.cpu))
    if mine.disk is not None and busier_disk(mine.disk, theirs.disk):
        reasons.append(f"other processes moved {mine.disk:.0f} MB/s on the disk under the images during "
                       "these runs, " + ("and the baseline's runs have no record of it" if theirs.disk is None
                                   else f"{theirs.disk:.0f} MB/s during the baseline's"))
    return "disturbed: " + "; ".join(reasons) if reasons else None


def busier_baseline(mine: Load, theirs: Load) -> str | None:
    """The line saying the baseline's runs were disturbed beyond these (the rule the other way
    round: issue 41, a baseline saved beside CPU burners let a real slowdown measured on a quieter
    machine pass as "+38.7 %, within bounds"), or None. Against such a baseline a time figure can
    still show a regression (slower on a quieter machine), never that it is within bounds."""
    reasons = []
    if theirs.cpu is not None and busier(theirs.cpu, mine.cpu):
        reasons.append(f"other processes used {theirs.cpu:.0f}% of the CPUs during the baseline's runs, "
                       + ("and these runs have no record of it" if mine.cpu is None
                          else f"{mine.cpu:.0f}% during these"))
    if theirs.disk is not None and busier_disk(theirs.disk, mine.disk):
        reasons.append(f"other processes moved {theirs.disk:.0f} MB/s on the disk under the images during the "
                       "baseline's runs, " + ("and these runs have no record of it" if mine.disk is None
                                              else f"{mine.disk:.0f} MB/s during these"))
    return "the baseline was measured on a busier machine: " + "; ".join(reasons) if reasons else None


def busier(mine: float, theirs: float | None) -> bool:
    """Whether others' share (%) during these runs is beyond the baseline's (None: not recorded,
    taken as none): MIN_POINTS more, and less than 1/LEFT_FACTOR of what they left over."""
    base = theirs or 0.0
    return mine - base >= MIN_POINTS and (100.0 - mine) * LEFT_FACTOR < 100.0 - base


def busier_disk(mine: float, theirs: float | None) -> bool:
    """Whether others' MB/s on the disk under the images during these runs is beyond the
    baseline's (None: not recorded, taken as none)."""
    base = theirs or 0.0
    return mine >= DISK_FACTOR * base and mine - base >= DISK_MIN_MBS


def _theirs(mine: float, theirs: float | None) -> str:
    if theirs is None:
        return "and the baseline's runs have no record of it"
    return f"{theirs:.0f}% during the baseline's (leaving {100 - mine:.0f}%, not {100 - theirs:.0f}%)"
