"""The answer first (issue 43): one line per comparison, its reference fixed (the baseline, or
the first configuration of a pair: a --paired variant or the second kernel is always the one
compared), e.g.

    nodelalloc vs default (ext4-single-1M): dd.write -24% (not significant), dd.read +37% (better)

with the gate's verdict in place of the comparison's where a rule gated the figure, and what
changed in the work beside the speed. The terminal's summary and the report both open with these
lines; every other view says the same in more detail. Pure: the callers gather the comparisons."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..case import options_from_text
from ..metrics import WORK_NAMES, is_compared, is_count, params_text
from ..verdicts.gate import INCONCLUSIVE, REGRESSION, WITHIN
from ..verdicts.stats import Comparison
from .tables import change_text

#: the words of a comparison and of the gate, worst first (the order the lines and their figures take)
WORST_FIRST = (REGRESSION, "worse", INCONCLUSIVE, "not significant", WITHIN, "better")

#: what a side that does not set an option is called
DEFAULT = "default"


def option_word(key: str, value: str) -> str:
    """An option as a person says it: a mount option by its name (nodelalloc), others key=value."""
    return value if key == "mount" else f"{key}={value}"


@dataclass(frozen=True)
class Side:
    """What sets one side of a comparison apart: its filesystem options, the kernel it ran under
    (a guest kernel's label, or a host kernel's release), its storage's pace."""

    options: Mapping[str, str]
    kernel: str = ""
    storage: str = ""

    @classmethod
    def of_spec(cls, spec: Mapping, kernel: str = "") -> "Side":
        """From a case's spec as the store keeps it (CaseSpec.to_dict); kernel: the host's release
        when the case ran under the host's kernel and that is worth naming."""
        rate = spec.get("storage_rate")
        return cls(dict(spec.get("options") or {}), str(spec.get("kernel") or kernel),
                   f"storage {rate:g} MB/s" if isinstance(rate, (int, float)) else "")


def versus(reference: Side, variant: Side) -> tuple[str, str]:
    """(the variant's words, the reference's): only what differs, e.g. ("nodelalloc", "default"),
    ("compress=zstd", "compress=no"), ("kernel 6.1", "kernel 6.18"); ("", "") when nothing does."""
    keys = [k for k in dict.fromkeys([*reference.options, *variant.options])
            if reference.options.get(k) != variant.options.get(k)]

    def words(side: Side) -> str:
        said = [option_word(k, side.options[k]) for k in keys if k in side.options]
        if len(said) < len(keys) and not said:
            said = [DEFAULT]
        elif len(said) < len(keys):
            said += [f"{k} {DEFAULT}" for k in keys if k not in side.options]
        if reference.kernel != variant.kernel:
            said.append(f"kernel {side.kernel or 'host'}")
        if reference.storage != variant.storage:
            said.append(side.storage or "storage unpaced")
        return " ".join(said)

    return words(variant), words(reference)


def where_of(test: str, dropped: Sequence[str] = ()) -> str:
    """The case a line is about, from a test id: its parameters in brackets, a round's suffix and
    the parts that name what the sides differ in (dropped: "compress=zstd", ...) left out:
    test_dd_write[btrfs-single-compress=zstd-1M-round3] -> btrfs-single-1M."""
    inside = test.rpartition("::")[2].partition("[")[2].rstrip("]") or test
    parts = [p for p in inside.split("-") if not re.fullmatch(r"round\d+", p)]
    return "-".join(p for p in parts if p not in dropped)


@dataclass(frozen=True)
class Compared:
    """One figure's comparison, as a line of the answer says it."""

    versus: str  # "nodelalloc vs default"
    where: str  # "ext4-single-1M"
    metric: str  # dd.write, work.write_amp
    params: str  # the metric's parameters (JSON), "{}" for none
    comparison: Comparison
    gate: str | None = None  # the gate's word (gate_word), None where no rule gated it
    test: str = ""  # the test that measured it (its work is said with that test's figure)

    @property
    def word(self) -> str:
        return self.gate or self.comparison.verdict

    @property
    def rank(self) -> int:
        return WORST_FIRST.index(self.word.partition(" (")[0])


def gate_word(line: str) -> str:
    """The gate's verdict in a gate line ("ext4-single inconclusive: disturbed: ..."), with the
    reason an inconclusive one was not judged: "inconclusive (disturbed)", "inconclusive (busier
    baseline)"."""
    said = line.partition(" ")[2]
    kind = next((k for k in (REGRESSION, WITHIN, INCONCLUSIVE) if said.startswith(k + ":")), INCONCLUSIVE)
    rest = said[len(kind) + 2:]
    if kind == INCONCLUSIVE and rest.startswith("disturbed"):
        return f"{kind} (disturbed)"
    if kind == INCONCLUSIVE and rest.startswith("the baseline was measured on a busier machine"):
        return f"{kind} (busier baseline)"
    return kind


def figure_text(found: Compared, shared: Mapping[str, str] | None = None) -> str:
    """dd.write -24% (not significant), iozone.write record=4K +3% (better); a count by its name:
    flushes per GB x4.0 (worse). shared: the metric parameters every figure of the line has, left
    out."""
    if is_count(found.metric):
        return f"{WORK_NAMES.get(found.metric, found.metric)} {change_text(found.comparison)} ({found.word})"
    own = {k: v for k, v in json.loads(found.params or "{}").items() if (shared or {}).get(k) != v}
    name = f"{found.metric} {params_text(json.dumps(own))}".rstrip() if own else found.metric
    return f"{name} {change_text(found.comparison, times=False)} ({found.word})"


def shared_params(figures: Sequence[Compared]) -> dict[str, str]:
    """The metric parameters every figure has with the same value (dd's bs, data and size)."""
    found = [json.loads(c.params or "{}") for c in figures]
    return {k: v for k, v in found[0].items() if all(other.get(k) == v for other in found[1:])} if found else {}


def work_text(counts: Sequence[Compared]) -> str:
    """What the line says of the work: the counts that moved (a comparison told them apart), or
    under a rule the ones not within bounds; else unchanged, or within bounds."""
    if all(c.gate for c in counts):
        said = [figure_text(c) for c in counts if c.gate != WITHIN]
        return ", ".join(said) if said else WITHIN
    said = [figure_text(c) for c in counts if c.gate not in (None, WITHIN) or c.comparison.significant]
    return ", ".join(said) if said else "unchanged"


def work_parts(figures: Sequence[Compared], counts: Sequence[Compared]) -> list[str]:
    """What a line says of the work: "the work: ..." when its counts come from one test (or none
    moved); else a part per test, named by that test's figure ("the work of dd.read: ...")."""
    if not counts:
        return []
    tests = list(dict.fromkeys(c.test for c in counts))
    said = {test: work_text([c for c in counts if c.test == test]) for test in tests}
    if len(tests) == 1 or len(set(said.values())) == 1 and next(iter(said.values())) in ("unchanged", WITHIN):
        return [f"the work: {work_text(counts) if len(tests) == 1 else next(iter(said.values()))}"]
    named = {c.test: c.metric for c in reversed(figures)}
    return [f"the work of {named.get(test, where_of(test))}: {text}" for test, text in said.items()]


def answer_lines(found: Sequence[Compared]) -> list[str]:
    """One line per comparison (its sides and its case), its figures then its work; the lines with
    the worst word first (a regression, then worse), each in the order its figures came."""
    return [line for _, line in answer_entries(found)]


def answer_entries(found: Sequence[Compared]) -> list[tuple[str, str]]:
    """(the line's worst word, the line) of answer_lines."""
    groups: dict[tuple[str, str], list[Compared]] = {}
    for item in found:
        groups.setdefault((item.versus, item.where), []).append(item)
    lines = []
    for (said, where), items in groups.items():
        figures = [c for c in items if not is_count(c.metric)]
        counts = sorted((c for c in items if is_count(c.metric)), key=lambda c: list(WORK_NAMES).index(c.metric)
                        if c.metric in WORK_NAMES else len(WORK_NAMES))
        shared = shared_params(figures)
        parts = [", ".join(figure_text(c, shared) for c in figures)] if figures else []
        parts += work_parts(figures, counts)
        worst = min(items, key=lambda c: c.rank)
        lines.append((worst.rank, worst.word.partition(" (")[0], f"{said} ({where}): " + "; ".join(parts)))
    return [(word, line) for _, word, line in sorted(lines, key=lambda entry: entry[0])]


def paired_versus(reference_spec: Mapping, variant_spec: Mapping) -> tuple[str, list[str]]:
    """("compress=zstd vs default", the id parts to leave out of the case's name) for a --paired
    (or kernel A/B) variant against its reference case."""
    mine, theirs = versus(Side.of_spec(reference_spec), Side.of_spec(variant_spec))
    variant_id, reference_id = str(variant_spec.get("id", "")), str(reference_spec.get("id", ""))
    dropped = sorted(set(variant_id.split("-")) ^ set(reference_id.split("-")))
    return f"{mine or variant_id} vs {theirs or reference_id}", dropped


def baseline_versus(name: str, reference: Side, candidate: Side, session: str = "") -> str:
    """"nodelalloc vs default" when the options (or the kernel) changed from the baseline's, else
    "session 4 vs nightly"."""
    mine, theirs = versus(reference, candidate)
    if mine or theirs:
        return f"{mine} vs {theirs}"
    return f"{session or 'this session'} vs {name}"


def gate_words(gated: Sequence[tuple[object, str, bool]]) -> dict[tuple[object, bool], str]:
    """(series key, whether against a --paired reference) -> the gate's word, from a case's gated
    lines (Judgement.gated: series, line, failed)."""
    return {(series.key, PAIRED_NOTE in line): gate_word(line) for series, line, _ in gated}


#: how a gate line against a --paired reference says so (bench.Bench._gate)
PAIRED_NOTE = " (paired by round with "


def against_baseline(s, cmp: Comparison, gate: str | None, label: str | None, base, kernels: tuple[str, str],
                     session: str) -> Compared:
    """A figure of series s against the baseline (label: its name; base: the compared series'
    newest series in it, whose options it had, or None) as the answer says it."""
    reference = Side(options_from_text(base.options if base is not None else s.options), kernels[0])
    said = baseline_versus(label or "the baseline", reference, Side(options_from_text(s.options), kernels[1]), session)
    where = where_of(s.key.test) + ("" if said.endswith(f" vs {label}") else f"; baseline {label}")
    return Compared(said, where, s.key.metric, s.key.params, cmp, gate, s.key.test)


def against_reference(s, cmp: Comparison, gate: str | None, reference_spec: Mapping,
                      variant_spec: Mapping) -> Compared:
    """A --paired (or kernel A/B) variant's figure against its reference case's."""
    said, dropped = paired_versus(reference_spec, variant_spec)
    return Compared(said, where_of(s.key.test, dropped), s.key.metric, s.key.params, cmp, gate, s.key.test)


def session_answer(results: Sequence, pairs: Mapping[str, tuple[Mapping, Mapping]], baseline: str | None = None,
                   bases: Mapping[object, object] | None = None,
                   kernels: tuple[str, str] = ("", ""), session: str = "") -> list[Compared]:
    """Every comparison of a session, as its answer says them. results: its CaseResults (bench.py;
    rounds of a pair one each); pairs: a --paired (or kernel A/B) variant's case id -> (the
    reference's spec, the variant's: CaseSpec.to_dict); baseline: --compare's name, with each
    compared series' newest series in the baseline (by series key) and (the baseline's host
    kernel, this session's); session: "session N"."""
    found: dict[tuple[object, bool], Compared] = {}
    for result in results:
        words = gate_words(result.judgement.gated)
        for s, cmp in result.judgement.comparisons:
            if is_compared(s.key.metric, s.unit):
                found[(s.key, False)] = against_baseline(s, cmp, words.get((s.key, False)), baseline,
                                                         (bases or {}).get(s.key), kernels, session)
        for s, cmp in result.judgement.paired:
            if s.case_id in pairs and is_compared(s.key.metric, s.unit):
                found[(s.key, True)] = against_reference(s, cmp, words.get((s.key, True)), *pairs[s.case_id])
    return list(found.values())


def stored_gate_words(cases: Sequence[Mapping]) -> dict[tuple[str, str, str, bool], str]:
    """(test, metric, metric params, whether against a --paired reference) -> the gate's word, from
    the gate's lines a session kept in its cases' manifests (Store.session_export's cases); an
    entry kept before its figure was (issue 43) is matched by the figure its line names."""
    found = {}
    for case in cases:
        for entry in case.get("manifest", {}).get("gate", []):
            line = str(entry.get("line", ""))
            figure = (entry.get("metric"), entry.get("params")) if entry.get("metric") else named_figure(line)
            if figure is not None:  # a --paired variant's line may be kept with its reference, which finished last
                found[(entry.get("test", case["test"]), figure[0], figure[1], PAIRED_NOTE in line)] = gate_word(line)
    return found


def named_figure(line: str) -> tuple[str, str] | None:
    """(metric, params JSON) a gate line judged, read from its text: "... inconclusive: dd.write
    bs=1M,size=8M 403 -> ..." -> ("dd.write", '{"bs":"1M","size":"8M"}') (params as the gate wrote
    them; None when the line names no figure that way)."""
    match = re.search(r"(?:^|: )([a-z_]+\.[\w.]+)((?: [\w.-]+=[^ ]*)?) [\d.e+-]+ -> ", line.partition(" ")[2])
    if match is None:
        return None
    params = dict(part.split("=", 1) for part in match.group(2).strip().split(",") if "=" in part)
    return match.group(1), json.dumps(params, sort_keys=True, separators=(",", ":"))


def report_answer(cases: Sequence[Mapping], changes: Sequence, paired: Sequence, base_label: str | None,
                  bases: Mapping[object, object], kernels: tuple[str, str] = ("", ""), session: str = "",
                  gates: Mapping[tuple[str, str, str, bool], str] | None = None) -> list[Compared]:
    """Every comparison a report shows, as its answer says them: changes against the baseline
    (base_label; bases: each compared series' newest series in it, for its options), paired: each
    --paired variant against its reference case (the variant's manifest names it: PAIRED_WITH);
    each (case, series, comparison). cases: Store.session_export's; kernels: (the baseline's host
    kernel, this session's) where they differ; gates: the gate's words where the cases' manifests
    do not keep them (fsbench compare's gate, judged as it compares), as stored_gate_words."""
    words = {**stored_gate_words(cases), **(gates or {})}
    specs = {case["test"]: case.get("spec", {}) for case in cases}
    references = {case["test"]: case["manifest"]["paired_with"]["reference"] for case in cases
                  if case.get("manifest", {}).get("paired_with")}
    order = {case["test"]: i for i, case in enumerate(cases)}  # as the session measured them, as its terminal says

    def measured(pairs: Sequence) -> list:
        return sorted(pairs, key=lambda pair: order.get(pair[1].key.test, len(order)))

    def word(s, paired: bool) -> str | None:
        return words.get((s.key.test, s.key.metric, s.key.params, paired))

    found = [against_baseline(s, cmp, word(s, False), base_label, bases.get(s.key), kernels, session)
             for _, s, cmp in measured(changes)]
    return found + [against_reference(s, cmp, word(s, True), specs.get(references[s.key.test], {}),
                                      specs.get(s.key.test, {}))
                    for _, s, cmp in measured(paired) if s.key.test in references]
