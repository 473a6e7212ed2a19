"""The answer first (issue 43): a line per comparison, its reference fixed, the worst first."""

from pytest_fsbench.bench import CaseResult
from pytest_fsbench.case import options_from_text
from pytest_fsbench.metrics import Direction
from pytest_fsbench.store.results import Series, SeriesKey
from pytest_fsbench.verdicts.gate import Judgement
from pytest_fsbench.verdicts.stats import COUNTS, PAIRED, compare
from pytest_fsbench.views import answer, tables

PARAMS = '{"bs":"1M","data":"random","size":"64M"}'


def series(test: str, metric: str, values, case_id: str = "ext4-single", options: str = "none",
           unit: str = "MB/s", direction: Direction = Direction.HIGHER, params: str = PARAMS) -> Series:
    key = SeriesKey(f"benchmarks/test_dd.py::{test}", "dd", PARAMS, metric, params)
    return Series(key, case_id, unit, direction, tuple(values), options, options)


FAST = [500.0, 510.0, 490.0, 505.0, 495.0, 502.0, 498.0, 507.0]
SLOW = [380.0, 390.0, 370.0, 385.0, 375.0, 382.0, 378.0, 388.0]


def test_a_side_is_named_by_what_sets_it_apart():
    default, delalloc_off = answer.Side({}), answer.Side({"mount": "nodelalloc"})
    assert answer.versus(default, delalloc_off) == ("nodelalloc", "default")
    assert answer.versus(answer.Side({"compress": "no"}), answer.Side({"compress": "zstd"})) == (
        "compress=zstd", "compress=no")
    assert answer.versus(answer.Side({}, "6.18"), answer.Side({}, "6.1")) == ("kernel 6.1", "kernel 6.18")
    assert answer.versus(answer.Side({"a": "1"}), answer.Side({"a": "1"})) == ("", "")
    # a key one side sets and the other leaves at its default, beside one both set
    assert answer.versus(answer.Side({"compress": "no"}), answer.Side({"compress": "zstd", "mount": "noatime"})) == (
        "compress=zstd noatime", "compress=no mount default")
    assert options_from_text("mkfs=-O a,b,mount=noatime") == {"mkfs": "-O a,b", "mount": "noatime"}
    assert options_from_text("none") == {}


def test_the_options_a_case_id_does_not_name_keep_a_comma_inside_a_value():
    """The results and comparison tables' options column: a value with a comma stays whole (split
    at every comma, mount=noatime,nodiratime was said beside the case id that names it)."""
    assert tables.unnamed_options("xfs-single", "mkfs=-m crc=1,finobt=1") == "mkfs=-m crc=1,finobt=1"
    assert tables.unnamed_options("ext4-single-mount=noatime,nodiratime", "mount=noatime,nodiratime") == ""
    assert tables.unnamed_options("ext4-single-mount=noatime", "mount=noatime,journal=off") == "journal=off"
    assert tables.unnamed_options("ext4-single", "none") == ""


def test_the_case_a_line_is_about_leaves_out_the_round_and_what_the_sides_differ_in():
    assert answer.where_of("b/test_dd.py::test_dd_write[btrfs-single-compress=zstd-data=50%-1M-round3]",
                           ["compress=zstd"]) == "btrfs-single-data=50%-1M"
    assert answer.where_of("test_dd_read[ext4-single-1M]") == "ext4-single-1M"


def test_the_gate_word_of_a_line_says_why_an_undecided_one_was_not_judged():
    assert answer.gate_word("ext4-single regression: dd.write 1 -> 2 MB/s") == "regression"
    assert answer.gate_word("ext4-single within bounds: work.write_amp 1 -> 1 x") == "within bounds"
    assert answer.gate_word("ext4-single inconclusive: disturbed: other processes used 88%") == \
        "inconclusive (disturbed)"
    assert answer.gate_word("ext4-single inconclusive: the baseline was measured on a busier machine: x") == \
        "inconclusive (busier baseline)"
    assert answer.named_figure("ext4-single inconclusive: disturbed: x, so the change is not judged: dd.write "
                               "bs=1M,size=8M 403 -> 455.6 MB/s +13%") == ("dd.write", '{"bs":"1M","size":"8M"}')
    assert answer.named_figure("ext4-single within bounds: work.flushes_per_gb 44.7 -> 44.7 /GB") == \
        ("work.flushes_per_gb", "{}")


def test_a_paired_session_says_one_line_with_the_variant_against_its_reference_and_the_work_beside():
    """The README's paired comparison: compress=zstd against the case, the reference fixed for the
    speed and the counts alike."""
    reference = {"fs": "btrfs", "layout": "single", "options": {}, "id": "btrfs-single"}
    variant = {"fs": "btrfs", "layout": "single", "options": {"compress": "zstd"}, "id": "btrfs-single-compress=zstd"}
    test = "test_dd_write[btrfs-single-compress=zstd-data=50%-1M]"
    speed = series(test, "dd.write", SLOW, "btrfs-single-compress=zstd", "compress=zstd")
    amp = series(test, "work.write_amp", [0.54] * 8, "btrfs-single-compress=zstd", "compress=zstd", "x",
                 Direction.LOWER, "{}")
    flushes = series(test, "work.flushes_per_gb", [60.0] * 8, "btrfs-single-compress=zstd", "compress=zstd", "/GB",
                     Direction.LOWER, "{}")
    judged = Judgement(paired=[(speed, compare(FAST, SLOW, Direction.HIGHER, 0.05, method=PAIRED)),
                               (amp, compare([1.0] * 8, [0.54] * 8, Direction.LOWER, 0.05, method=COUNTS)),
                               (flushes, compare([60.0] * 8, [60.0] * 8, Direction.LOWER, 0.05, method=COUNTS))])
    found = answer.session_answer([CaseResult("t", "btrfs-single-compress=zstd", [speed], "runs", judged)],
                                  {"btrfs-single-compress=zstd": (reference, variant)})
    assert answer.answer_lines(found) == [
        "compress=zstd vs default (btrfs-single-data=50%-1M): dd.write -24% (worse); the work: device bytes per "
        "byte written -46% (better)"]


def test_a_gated_session_says_the_gates_words_the_options_that_changed_and_regressions_first():
    """Gating nodelalloc against a default baseline (issue 43: the option was named only at the
    end of the gate's line): the line names it, and the gate's verdicts replace the comparison's."""
    write = series("test_dd_write[ext4-single-1M]", "dd.write", SLOW, options="mount=nodelalloc")
    read = series("test_dd_read[ext4-single-1M]", "dd.read", FAST, options="mount=nodelalloc")
    other = series("test_dd_write[xfs-single-1M]", "dd.write", FAST, "xfs-single")
    slower, same = compare(FAST, SLOW, Direction.HIGHER, 0.05), compare(FAST, FAST, Direction.HIGHER, 0.05)

    def result(s, cmp, line):
        return CaseResult(s.key.test, s.case_id, [s], "runs", Judgement(comparisons=[(s, cmp)], gated=[(s, line, False)]))

    results = [result(other, same, "xfs-single within bounds: dd.write ..."),
               result(write, slower, "ext4-single regression: dd.write ..."),
               result(read, same, "ext4-single inconclusive: disturbed: other processes used 88% ...")]
    bases = {s.key: series(s.key.test, s.key.metric, FAST, s.case_id) for s in (write, read, other)}
    found = answer.session_answer(results, {}, "nightly", bases,
                                  session="session 4")
    assert answer.answer_lines(found) == [
        "nodelalloc vs default (ext4-single-1M; baseline nightly): dd.write -24% (regression), dd.read +0% "
        "(inconclusive (disturbed))",
        "session 4 vs nightly (xfs-single-1M): dd.write +0% (within bounds)"]


def test_the_gate_section_says_each_note_once():
    """Issue 43: each line of a case repeated the options that changed and the counts' notes."""
    changed = "the filesystem options changed: baseline none, now mount=nodelalloc"
    entries = [
        (f"ext4-single inconclusive: dd.write 403 -> 469 MB/s +16%; cannot tell; {changed}", False, "dd.write"),
        (f"ext4-single within bounds: work.write_amp 1 -> 1 x +0.0%; within the 5% allowed; {changed}"
         "; a count of the work: judged whatever the load, which does not move it", False, "work.write_amp"),
        (f"ext4-single regression: dd.read 900 -> 400 MB/s -55%; worse than the 5% allowed; {changed}", True,
         "dd.read")]
    lines = tables.gate_section(entries, 200)
    assert lines == [
        "ext4-single inconclusive: dd.write 403 -> 469 MB/s +16%; cannot tell",
        "ext4-single within bounds: work.write_amp 1 -> 1 x +0.0%; within the 5% allowed",
        "ext4-single regression: dd.read 900 -> 400 MB/s -55%; failed its case: the whole line is under FAILURES "
        "above",
        f"ext4-single, each of its lines above: {changed}",
        "work.*: a count of the work: judged whatever the load, which does not move it"]
    # where pytest shows no tracebacks, the failed line is said whole here
    assert tables.gate_section(entries, 200, failures_shown=False)[2] == \
        "ext4-single regression: dd.read 900 -> 400 MB/s -55%; worse than the 5% allowed"
    assert all(len(line) <= 80 for line in tables.gate_section(entries, 80))
    assert tables.clauses("a (b; c); d [e; f]; g") == ["a (b; c)", "d [e; f]", "g"]


def test_the_options_a_case_id_leaves_out_show_in_every_table_it_is_compared_in():
    """Issue 43: gating nodelalloc against a default baseline, the case id stays
    test_dd_write[ext4-single-1M]; the option was named only at the end of the gate's line."""
    now = series("test_dd_write[ext4-single-1M]", "dd.write", SLOW, options="mount=nodelalloc")
    before = series("test_dd_write[ext4-single-1M]", "dd.write", FAST)
    lines = tables.comparison_lines([("test_dd_write[ext4-single-1M]", now, compare(FAST, SLOW, Direction.HIGHER))],
                                    0.05, width=200, bases={now.key: before})
    assert "options of every row: mount=nodelalloc (baseline: none)" in " ".join(lines)
    result = CaseResult(now.key.test, "ext4-single", [now], "runs")
    assert "options of every row: mount=nodelalloc" in " ".join(tables.results_table([result], 200))
