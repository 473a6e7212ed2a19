"""The published studies fsbench re-runs, as data: one TOML file per study in this directory.

Each file holds what was extracted from the study's text (its method, every published number
with the table or figure it comes from, its key findings as the study states them) and an
[fsbench] table that says how fsbench re-runs it:

- scales.quick / scales.paper: the pytest arguments of the matrix (filesystems, layouts,
  options, workloads and their parameters, repetitions) and what each scale changes;
- checks: the findings as checkable claims about two sets of fsbench's results (a selector each:
  fs, layout, options, workload parameters, cache, data) for one metric: "higher", "lower" or
  "similar" (within a tolerance); the verdict is reproduced, contradicted or not decided, with
  the interval of the change;
- published: how a published number maps onto fsbench's results (metric, case, parameters,
  and the factor from the study's unit to MB/s = 10^6 B/s), so the report shows it beside
  fsbench's median; a published number marked `suspect = true` (its `note` says why, e.g. a
  value printed in the wrong unit) is shown as printed with that note, and no ratio;
- blind / cannot_run: where the study was blind and what fsbench runs beside it; what this
  machine cannot run, why, and what stands in.

A study launches sessions and reads them back: it may import the session's settings and cases
(settings.py, matrix.py), views/, verdicts/, measure/ (whether the page cache served a figure),
kernels/ (where its cases run), store/ and the ground;
only the CLI imports it.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..measure.cache_check import served_from_cache
from ..metrics import Direction
from ..system.throttle import parse_rate, rate_text
from ..verdicts.stats import compare, plain, summarize

STUDY_DIR = Path(__file__).resolve().parent
SCALES = ("quick", "paper")
REPRODUCED, CONTRADICTED, UNDECIDED = "reproduced", "contradicted", "not decided"
NOT_COMPARABLE = "not comparable"
VERDICTS = (REPRODUCED, CONTRADICTED, NOT_COMPARABLE, UNDECIDED)
#: what a claim may depend on, how the study had it, and how the session's own is read (conditions)
DISKS = "disks"
#: the storage's speed, e.g. "32 MB/s": a claim with it is judged on the cases whose images were paced to
#: that rate (--storage-rate), else on the images' own storage and is not comparable; a case's, not a session's
STORAGE = "storage"


@dataclass(frozen=True)
class Check:
    id: str
    claim: str
    source: str
    metric: str
    a: dict  # selector of the results the claim is about
    b: dict  # selector of those it compares them with
    expect: str  # higher, lower or similar (a against b)
    tolerance_pct: float = 10.0  # for similar
    by: str = ""  # who claims it: the study, or fsbench's better variant
    #: the study's conditions the claim depends on, e.g. {"disks": "separate"} or {"storage": "32 MB/s"}:
    #: measured otherwise, the finding is not comparable, never contradicted
    conditions: dict = field(default_factory=dict)
    #: the change the study published, a against b, in percent (e.g. +126 for 31.6 -> 71.4 MB/s); what
    #: the runs of the claim's cases are chosen to decide (None: the study gives none)
    published_pct: float | None = None

    def precision(self) -> float | None:
        """How close (+-%) each side's median must be known so that a change of the published size
        is decided: half the room the claim has (the published change itself for higher or lower;
        the tolerance less the published change for similar), since the change's interval is about
        sqrt(2) times each median's; None when the claim gives no size (higher or lower unpublished)."""
        if self.expect == "similar":
            room = self.tolerance_pct - abs(self.published_pct or 0.0)
        elif self.published_pct is None:
            return None
        else:
            room = abs(self.published_pct)
        return round(min(max(room / 2, 1.0), 50.0), 1)


@dataclass(frozen=True)
class Study:
    name: str
    seed: str
    title: str
    authors: str
    year: int
    path: Path
    data: dict = field(repr=False)

    @property
    def fsbench(self) -> dict:
        return self.data["fsbench"]

    @property
    def summary(self) -> str:
        return self.fsbench["summary"]

    def scale(self, name: str) -> dict:
        if name not in SCALES:
            raise UsageError(f"--scale {name}: choose quick or paper")
        return self.fsbench["scales"][name]

    def checks(self) -> list[Check]:
        return [Check(c["id"], c["claim"], c["source"], c["metric"], c["a"], c["b"], c["expect"],
                      float(c.get("tolerance_pct", 10.0)), c.get("by", "study"), c.get("conditions", {}),
                      None if c.get("published_pct") is None else float(c["published_pct"]))
                for c in self.fsbench["checks"]]

    @property
    def published(self) -> list[dict]:
        return self.data.get("published", [])

    @property
    def citation(self) -> str:
        """Who wrote the study, when and what it is, as its text gives them (the title apart):
        "Hajo Möller, 2013-03-28 (WS 2012/13); project report (...)". An author or a year the
        text does not print is said to be missing, not made up."""
        who = self.authors or "author not named in the source text"
        when = str(self.data.get("date") or self.year or "year unknown")
        if self.data.get("year_printed") is False:
            when += " (year not printed in the source text)"
        kind = self.data.get("kind", "")
        return f"{who}, {when}" + (f"; {kind}" if kind else "")


def load(path: Path) -> Study:
    data = tomllib.loads(path.read_text())
    return Study(data["name"], data["seed"], data["title"], data.get("authors", ""), int(data.get("year", 0)), path,
                 data)


def studies(directory: Path = STUDY_DIR) -> dict[str, Study]:
    """Every study, by name, in seed order."""
    found = [load(p) for p in sorted(directory.glob("*.toml"))]
    return {s.name: s for s in sorted(found, key=lambda s: s.seed)}


def study(name: str) -> Study:
    known = studies()
    if name not in known:
        raise UsageError(f"no study {name!r}; choose one of {', '.join(known)} (fsbench study lists them)")
    return known[name]


# --- selecting results ------------------------------------------------------------------------

def matches(selector: dict, facts: dict) -> bool:
    """Whether a result's facts (fs, layout, options, workload parameters, cache, data, metric)
    satisfy a selector: every key equal; options and params compared key by key (a key absent
    from a result's options means the filesystem's default, written "")."""
    for key, wanted in selector.items():
        if key in ("options", "params") and isinstance(wanted, dict):
            have = facts.get(key) or {}
            if any(str(have.get(k, "")) != str(v) for k, v in wanted.items()):
                return False
        elif str(facts.get(key, "")) != str(wanted):
            return False
    return True


def row_facts(row) -> dict:
    """What a selector can ask of a report Row; storage: the rate its images were paced to
    ("32 MB/s"), "" on the image directory's own storage."""
    spec = row.spec
    return {"fs": spec.get("fs", ""), "layout": spec.get("layout", ""), "options": spec.get("options", {}),
            "params": {**row.workload_params, **row.series.params}, "cache": row.cache, "data": row.data,
            "metric": row.series.key.metric, "workload": row.series.key.workload, "case": row.series.case_id,
            STORAGE: rate_text(float(spec.get("storage_rate") or 0))}


def samples(rows: list, selector: dict, metric: str) -> tuple[list[float], list]:
    """The values and rows a selector takes; on the images' own storage unless it names a rate."""
    chosen = [r for r in rows if matches({STORAGE: "", **selector, "metric": metric}, row_facts(r))]
    return [v for r in chosen for v in r.series.values], chosen


def _values(rows: list) -> list[float]:
    return [v for r in rows for v in r.series.values]


def emulated(row) -> bool:
    """Whether the row was measured in a virtual machine whose CPU QEMU emulates (TCG): such
    numbers compare only with each other (vm.mixed_emulation), never with a host's or a KVM guest's."""
    return row.emulation == "emulated"


def like_with_like(a_rows: list, b_rows: list) -> tuple[list, list, str]:
    """The two sides of a comparison measured alike: emulated rows only against emulated ones. A
    side that has both kinds keeps the kind the other side has (native when both have both), and
    the text names the cases left out; when the sides share no kind, no row is kept and the text
    says why nothing is compared."""
    if not a_rows or not b_rows:
        return a_rows, b_rows, ""
    kinds = {emulated(r) for r in a_rows} & {emulated(r) for r in b_rows}
    if not kinds:
        return [], [], (f"not compared: a was measured {_how(a_rows)}, b {_how(b_rows)}; numbers measured under "
                        "QEMU's CPU emulation compare only with each other")
    kind = min(kinds)  # native (False) before emulated
    left = sorted({r.series.case_id for r in a_rows + b_rows if emulated(r) != kind})
    note = f"; left out, measured {'natively' if kind else 'emulated'}: {', '.join(left)}" if left else ""
    return [r for r in a_rows if emulated(r) == kind], [r for r in b_rows if emulated(r) == kind], note


def _how(rows: list) -> str:
    if emulated(rows[0]):
        kernels = ", ".join(sorted({r.spec.get("kernel", "") for r in rows}))
        return f"emulated (in {kernels}, a virtual machine under TCG)"
    return "natively"


def _where(a_rows: list, b_rows: list) -> str:
    """Where the compared cases ran, when not (both) on the host: '; in vm, emulated (TCG)'."""
    a, b = (", ".join(sorted({r.spec.get("kernel", "host") for r in rows})) for rows in (a_rows, b_rows))
    if a == b == "host":
        return ""
    place = f"in {a}" if a == b else f"a in {a}, b in {b}"
    return f"; {place}" + (", emulated (TCG)" if any(emulated(r) for r in a_rows + b_rows) else "")


def apart_before(check: Check, specs: list, emulated_ids: set[str]) -> bool:
    """Whether, before the session, the check's two sides fall on cases of which one side's are
    all emulated (their ids in emulated_ids) and the other's all not: judge will not compare them."""
    def kinds(selector: dict) -> set[bool]:
        of_case = {k: v for k, v in selector.items() if k in ("fs", "layout", "options")}
        return {spec.id in emulated_ids for spec in specs
                if matches(of_case, {"fs": spec.fs, "layout": spec.layout, "options": dict(spec.options)})}

    a, b = kinds(check.a), kinds(check.b)
    return bool(a and b and not a & b)


@dataclass(frozen=True)
class Verdict:
    check: Check
    verdict: str
    detail: str  # the change with its interval, or why nothing could be decided
    shift_pct: float | None = None
    interval: tuple[float, float] | None = None


def session_conditions(manifest: dict) -> dict[str, str]:
    """The conditions a session measured under, from its manifest, in the words a check's
    conditions use: disks are separate only when --devices gave block devices."""
    return {DISKS: "separate" if manifest.get("devices") == "block" else "loop images on one disk"}


def differing(check: Check, measured: dict[str, str]) -> list[str]:
    """The claim's session-wide conditions this session did not have, each as 'the study's X; here
    Y' (its storage is a case's: judged_storage)."""
    return [f"the study's {key} {wanted}; here {measured.get(key, 'unknown')}"
            for key, wanted in check.conditions.items() if key != STORAGE and measured.get(key) != wanted]


def claim_rate(check: Check) -> str:
    """The storage rate the claim depends on, as rows name it ("32 MB/s"), or "" for none."""
    wanted = check.conditions.get(STORAGE)
    return rate_text(parse_rate(str(wanted))) if wanted else ""


def judged_storage(check: Check, rows: list) -> tuple[str, list[str]]:
    """The storage the claim is judged on: its rate when both sides were measured on images paced
    to it; else the images' own, with the condition that differs (and b's median there, which for a
    claim whose b is uncompressed is the storage's own speed)."""
    rate = claim_rate(check)
    if not rate or all(samples(rows, {STORAGE: rate, **side}, check.metric)[1] for side in (check.a, check.b)):
        return rate, []
    b_values, _ = samples(rows, check.b, check.metric)
    own = f" (b's median {check.metric} there {plain(_median(b_values))} MB/s)" if b_values else ""
    return "", [f"the study's storage {rate}; here the loop images' own, not slowed{own}"]


def judge(check: Check, rows: list, alpha: float = 0.05, measured: dict[str, str] | None = None) -> Verdict:
    """The check against the measured rows: a's runs against b's runs (pooled when a selector
    takes several cases), one-sided at alpha each way, the change as a percent of b. Measured
    under other conditions than the claim depends on, it is not comparable (the change is still
    shown); with no session conditions given (measured None), judged as measured. A claim on the
    study's storage is judged on the cases paced to it whenever they were measured (judged_storage)."""
    storage, other_storage = judged_storage(check, rows)
    found = _judged(check, rows, alpha, storage)
    unlike = (differing(check, measured) if measured is not None else []) + other_storage
    if unlike and found.verdict in (REPRODUCED, CONTRADICTED, UNDECIDED):
        measured_change = found.detail.split("; not decided:")[0]  # runs would not make it comparable
        return Verdict(check, NOT_COMPARABLE, f"{measured_change}; not comparable: {'; '.join(unlike)}",
                       found.shift_pct, found.interval)
    return found


def _judged(check: Check, rows: list, alpha: float, storage: str = "") -> Verdict:
    _, a_rows = samples(rows, {STORAGE: storage, **check.a}, check.metric)
    _, b_rows = samples(rows, {STORAGE: storage, **check.b}, check.metric)
    a_rows, b_rows, apart = like_with_like(a_rows, b_rows)
    if apart and not a_rows:
        return Verdict(check, UNDECIDED, apart)
    a, b = _values(a_rows), _values(b_rows)
    if len(a) < 2 or len(b) < 2:
        missing = "a" if len(a) < 2 else "b"
        return Verdict(check, UNDECIDED, f"not measured in this session ({missing}: "
                       f"{_selector_text(check.a if missing == 'a' else check.b)}; fewer than 2 runs)")
    try:
        cmp = compare(b, a, Direction.HIGHER, alpha)
    except ValueError as exc:
        return Verdict(check, UNDECIDED, f"no comparison: {exc}")
    lo, hi = cmp.pct_ci
    detail = (f"{plain(_median(a))} vs {plain(_median(b))}: {cmp.shift_pct:+.1f}% [{lo:+.1f}%, {hi:+.1f}%] "
              f"p={cmp.p_value:.3g}, n={len(a)}/{len(b)} ({len(a_rows)}/{len(b_rows)} cases)"
              f"{_where(a_rows, b_rows)}{apart}{f'; on storage paced to {storage}' if storage else ''}")
    if check.expect == "similar":
        if -check.tolerance_pct <= lo and hi <= check.tolerance_pct and cmp.has_interval:
            verdict = REPRODUCED
        elif cmp.significant and (hi < -check.tolerance_pct or lo > check.tolerance_pct):
            verdict = CONTRADICTED
        else:
            verdict = UNDECIDED
        detail += f" (claim: within ±{check.tolerance_pct:g}%)"  # what "similar" means, whatever the verdict
    else:
        up = cmp.verdict == "better"
        down = cmp.verdict == "worse"
        wanted, opposite = (up, down) if check.expect == "higher" else (down, up)
        verdict = REPRODUCED if wanted else CONTRADICTED if opposite else UNDECIDED
    if verdict == UNDECIDED:
        detail += runs_to_decide(check, cmp.shift_pct, (lo, hi), min(len(a), len(b)))
        spent = sorted({r.series.case_id for r in a_rows + b_rows if getattr(r, "stopped_by", None) == "max-runs"})
        if spent:
            detail += (f"; {', '.join(spent)} ran to the session's --max-runs before the median was known as "
                       "closely as the claim needs (the machine's noise is larger than the claim's change)")
    return Verdict(check, verdict, detail, cmp.shift_pct, (lo, hi))


def runs_to_decide(check: Check, shift: float, interval: tuple[float, float], runs: int) -> str:
    """Why a claim is not decided, in runs: an interval narrows as 1/sqrt(runs), so at the noise
    measured here about runs x (half-width / room)^2 runs a side would decide it, where room is
    how far the shift is from zero (higher, lower) or from the tolerance's edge (similar)."""
    half = (interval[1] - interval[0]) / 2
    room = check.tolerance_pct - abs(shift) if check.expect == "similar" else abs(shift)
    if not math.isfinite(half) or half <= 0:
        return ""
    if room <= 0.5:
        return (f"; not decided: the change {shift:+.1f}% sits at the claim's edge, so no number of runs at "
                "this noise decides it")
    # at least one more run: at this many runs the interval's spread would decide it, but its
    # rank test cannot reach the level yet (3 runs a side: p >= 0.05 one-sided)
    needed = max(math.ceil(runs * (half / room) ** 2), runs + 1)
    return f"; not decided: about {needed} runs a side would decide it at the noise measured here ({runs} ran)"


def _median(values: list[float]) -> float:
    return summarize(values).median


def _selector_text(selector: dict) -> str:
    parts = []
    for key, value in selector.items():
        if isinstance(value, dict):
            parts += [f"{k}={v}" for k, v in value.items()]
        else:
            parts.append(f"{key}={value}")
    return " ".join(parts)


# --- published numbers beside measured ones ----------------------------------------------------

def _fill(template: object, entry: dict) -> object:
    """A mapping template with {field} and {params.field} of a published entry filled in."""
    if isinstance(template, dict):
        return {k: _fill(v, entry) for k, v in template.items()}
    if not isinstance(template, str):
        return template

    def value(match: re.Match) -> str:
        found: object = entry
        for part in match.group(1).split("."):
            found = found.get(part, "") if isinstance(found, dict) else ""
        return str(found)

    return re.sub(r"\{([\w.]+)\}", value, template)


def options_text(options: dict) -> str:
    """A case's filesystem options as its id shows them: compression=lzjb (none: the defaults)."""
    return ",".join(f"{k}={v}" for k, v in options.items()) or "defaults"


def ran_text(rows: list) -> str:
    """The options fsbench's matching cases ran with (what ran, which may stand in for the study's),
    and the guest kernel of those that ran in one: compression=lz4 in vm (emulated)."""
    return "; ".join(sorted({options_text(r.spec.get("options", {})) + _in_guest(r) for r in rows}))


def _in_guest(row) -> str:
    kernel = row.spec.get("kernel")
    return f" in {kernel}" + (" (emulated)" if emulated(row) else "") if kernel else ""


@dataclass(frozen=True)
class Beside:
    entry: dict
    published_mb_s: float | None  # the published value in fsbench's unit (None: a ratio, percent or suspect)
    measured: float | None  # fsbench's median of the matching results
    rows: int  # how many fsbench cases matched
    ran: str = ""  # the options fsbench's matching cases ran with
    from_cache: int = 0  # how many of those cases' figures the page cache served (cache_check)

    @property
    def cache_mark(self) -> str:
        """' (cache)' when the page cache served fsbench's figure, ' (cache: 1 of 2)' when it
        served some of the cases' figures behind the median, else ''."""
        if not self.from_cache:
            return ""
        return " (cache)" if self.from_cache >= self.rows else f" (cache: {self.from_cache} of {self.rows})"


def beside(study: Study, rows: list) -> list[Beside]:
    """Each published number a mapping rule of the study covers, with fsbench's median of the
    results that match it (rows: report Rows). Numbers whose case fsbench did not run are left out."""
    found = []
    for rule in study.fsbench.get("published", []):
        for entry in study.published:
            if not matches(rule.get("when", {}), entry) or entry.get("statistic") not in rule["statistics"]:
                continue
            selector = _selector_for(rule, entry)
            if selector is None:
                continue
            values, chosen = samples(rows, selector, str(_fill(rule["metric"], entry)))
            if not chosen:
                continue
            published = (float(entry["value"]) * float(rule.get("factor", 1.0))
                         if entry.get("unit") == rule["unit"] and not entry.get("suspect") else None)
            found.append(Beside(entry, published, _median(values), len(chosen), ran_text(chosen),
                                sum(served_from_cache(r.disk_share) for r in chosen)))
    return found


def _selector_for(rule: dict, entry: dict) -> dict | None:
    """fsbench's selector for a published entry, or None when the rule cannot place it."""
    layouts = rule.get("layouts", {})
    layout = layouts.get(entry.get("layout", "")) if layouts else entry.get("layout")
    if layout is None:
        return None
    selector: dict = {"fs": _fill(rule.get("fs", "{fs}"), entry), "layout": layout,
                      "params": _fill(rule.get("params", {}), entry), **rule.get("fixed", {})}
    if "options" in rule:
        options = rule["options"].get(entry.get("options", ""))
        if options is None:
            return None
        selector["options"] = options
    return selector


@dataclass(frozen=True)
class ChangeBeside:
    entry: dict
    measured_pct: float | None  # fsbench's change of the median, a against b, in percent
    n: tuple[int, int]
    ran: str = ""  # the options fsbench's a and b cases ran with: "a vs b"


def changes_beside(study: Study, rows: list) -> list[ChangeBeside]:
    """Each published percent change a rule covers (e.g. compressed against uncompressed), with
    fsbench's change of the medians between the rule's two selectors for the same test; a
    published record size that fsbench measured narrows both sides to it."""
    found = []
    for rule in study.fsbench.get("changes", []):
        for entry in study.published:
            if not matches(rule["when"], entry):
                continue
            metric = str(_fill(rule["metric"], entry))
            record = str(entry.get("params", {}).get("record_size", ""))
            narrow = {"record": record} if record and ".." not in record else {}
            a_sel = {**rule["a"], "params": {**rule["a"].get("params", {}), **narrow}}
            b_sel = {**rule["b"], "params": {**rule["b"].get("params", {}), **narrow}}
            _, a_rows = samples(rows, a_sel, metric)
            _, b_rows = samples(rows, b_sel, metric)
            ran = f"{ran_text(a_rows)} vs {ran_text(b_rows)}"
            a_rows, b_rows, apart = like_with_like(a_rows, b_rows)
            a, b = _values(a_rows), _values(b_rows)
            if apart and not a_rows:
                found.append(ChangeBeside(entry, None, (0, 0), f"{ran} ({apart.removeprefix('not compared: ')})"))
            elif a and b:
                pct = (_median(a) / _median(b) - 1) * 100 if _median(b) else None
                found.append(ChangeBeside(entry, pct, (len(a), len(b)), ran + apart))
    return found


def suspect_note(item: Beside) -> str | None:
    """Why the published value is not compared, when the study data marks it suspect."""
    return str(item.entry.get("note") or "the published value is marked suspect") if item.entry.get("suspect") else None


def ratio_text(item: Beside) -> str:
    """fsbench's median over the published value; none for a value marked suspect (its note
    says why, below the table)."""
    if item.entry.get("suspect"):
        return "not compared (see the note below)"
    if item.published_mb_s is None or item.measured is None or not item.published_mb_s:
        return ""
    return f"{item.measured / item.published_mb_s:.2f}"
