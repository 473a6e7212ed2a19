"""The studies as data: five of them, each scale's arguments ones fsbench takes, each finding a
check on a metric fsbench measures, published numbers mapped onto fsbench's results, and the PTS
suites in step with the paper scales."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from lxml import etree
from lxml import html as lxml_html

from pytest_fsbench.case import CaseSpec
from pytest_fsbench import terminal
from pytest_fsbench.views import report
from pytest_fsbench import studies
from pytest_fsbench.filesystems import TOOLS
from pytest_fsbench.system.host import Host
from pytest_fsbench.kernels.kernel import fallback
from pytest_fsbench.pts.profiles import SUITES_DIR
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.settings import BY_FLAG
from pytest_fsbench.sizes import parse_size
from pytest_fsbench.store.results import Store
from pytest_fsbench.studies import launch, page
from pytest_fsbench.workloads import KNOWN_METRICS, PARAMS

ALL = studies.studies()
KNOWN_FLAGS = set(BY_FLAG) | {f"--{p.name}" for p in PARAMS}


def known_metric(name: str) -> bool:
    return any(re.fullmatch(spec.pattern, name) for spec in KNOWN_METRICS)


def test_five_studies_in_seed_order_with_their_sources():
    assert list(ALL) == ["raid-filesystems", "zfs-features", "iozone-linux-fs", "compression", "btrfs-options"]
    assert [s.seed for s in ALL.values()] == ["000", "001", "002", "003", "004"]
    assert all(s.published or s.fsbench.get("no_published_values") for s in ALL.values())
    assert all(entry.get("source") for s in ALL.values() for entry in s.published)


@pytest.mark.parametrize("name", list(ALL))
@pytest.mark.parametrize("scale", studies.SCALES)
def test_each_scale_is_fsbench_options_and_a_time(name, scale):
    chosen = ALL[name].scale(scale)
    flags = [a.split("=", 1)[0] for a in chosen["args"] if a.startswith("--") and "=" in a]
    assert set(flags) <= KNOWN_FLAGS, set(flags) - KNOWN_FLAGS
    assert chosen["minutes"] > 0 and chosen["note"]
    for flag in ("--fs", "--layout", "--runs"):
        BY_FLAG[flag].value(launch.option_value(chosen["args"], flag, BY_FLAG[flag].default or ""))


@pytest.mark.parametrize("name", list(ALL))
def test_each_finding_is_a_check_on_a_measured_metric(name):
    checks = ALL[name].checks()
    assert len(checks) >= 4
    for check in checks:
        assert known_metric(check.metric), check.metric
        assert check.expect in ("higher", "lower", "similar") and check.a != check.b
        assert check.source and check.claim


@pytest.mark.parametrize("name", [n for n in ALL if ALL[n].fsbench.get("published")])
def test_published_rules_place_numbers_on_measured_metrics(name):
    study = ALL[name]
    placed = 0
    for rule in study.fsbench["published"]:
        for entry in study.published:
            if studies.matches(rule.get("when", {}), entry) and entry.get("statistic") in rule["statistics"]:
                if studies._selector_for(rule, entry) is not None:
                    assert known_metric(str(studies._fill(rule["metric"], entry)))
                    placed += 1
    assert placed >= 10


@pytest.mark.parametrize("name", list(ALL))
def test_the_pts_suite_is_in_step_with_the_paper_scale(name):
    """The suite of the same study runs the record and file sizes of the paper scale's IOzone."""
    study = ALL[name]
    suite = SUITES_DIR / study.fsbench["pts_suite"] / "suite-definition.xml"
    arguments = [e.text for e in etree.parse(str(suite)).iter("Arguments")]
    args = study.scale("paper")["args"]
    if not any("iozone" in a for a in args):
        assert not any("-r " in a for a in arguments)
        return
    sizes = lambda flag: {parse_size(v) for a in arguments for v in re.findall(flag + r" (\d+[kmg])", a)}  # noqa: E731
    records = {parse_size(r) for r in launch.option_value(args, "--iozone-record", "").split(",")}
    files = {parse_size(f) for f in launch.option_value(args, "--iozone-file", "").split(",")}
    assert sizes("-r") == records
    assert sizes("-s") == files


# --- judging findings on a real store of made-up runs ----------------------------------------

#: how a case measured in a virtual machine under QEMU's emulation is recorded (vm.vm_manifest)
EMULATED_VM = {"runs_under": "vm", "label": "vm", "release": "6.1.0-56-amd64", "accelerator": "tcg",
               "openzfs": "2.1.11-1"}


def store_of(tmp_path: Path, cases: dict[tuple, list[float]], metric: str = "iozone.write",
             argv: tuple[str, ...] = ()) -> tuple[Store, int]:
    """A session whose runs of one metric (iozone.write) per (fs, layout, options, record[, "vm"])
    are the given values; a key ending in "vm" is a case measured in an emulated virtual machine,
    one ending in a number a case on storage paced to that many MB/s (--storage-rate)."""
    store = Store(tmp_path / "fsbench.db")
    sid = store.start_session("t-1", {"argv": list(argv)}, {"kernel": "6.1"})
    for (fs, layout, options, record, *extra), values in cases.items():
        vm = [x for x in extra if x == "vm"]
        rate = next((x for x in extra if isinstance(x, float)), 0.0)
        case_id = "-".join([*vm, fs, layout, *(f"{k}={v}" for k, v in options),
                            *([f"storage={rate:g}MBps"] if rate else [])])
        spec = {"fs": fs, "layout": layout, "options": dict(options), "id": case_id, **({"kernel": "vm"} if vm else {}),
                **({"storage_rate": rate} if rate else {})}
        manifest = {"kernel": EMULATED_VM, "host": {"kernel": "6.18"}} if vm else {
            "host": {"kernel": "6.18", "zfs_implementation": "zfs-fuse"}}
        row = store.case_row(sid, f"benchmarks/test_iozone.py::test_iozone[{case_id}-{record}]",
                             case_id, spec, "iozone", {"record": record, "file": "512M"}, "drop", "random", manifest)
        for v in values:
            store.add_run(row, False, "t", 1.0, "drop",
                          [Metric(metric, v, "MB/s", Direction.HIGHER, {"record": record, "file": "512M"})])
        store.finish_case(row, "done", "runs")
    store.finish_session(sid, "complete")
    return store, sid


PLAIN = (("compress", "no"), ("mount", "datacow,datasum"))
ZLIB = (("compress", "zlib"), ("mount", "datacow,datasum"))


def check(expect: str, tolerance: float = 10.0) -> studies.Check:
    return studies.Check("c", "claim", "Table 1", "iozone.write", {"fs": "btrfs", "options": dict(ZLIB)},
                         {"fs": "btrfs", "options": dict(PLAIN)}, expect, tolerance)


def test_a_finding_is_reproduced_contradicted_or_not_decided(tmp_path):
    faster = [70.0, 71.0, 72.0, 69.0, 70.5, 71.5]
    slower = [31.0, 32.0, 31.5, 30.5, 32.5, 31.8]
    store, sid = store_of(tmp_path, {("btrfs", "single", ZLIB, "16M"): faster, ("btrfs", "single", PLAIN, "16M"): slower})
    rows = report.report_data(store, sid).rows
    up = studies.judge(check("higher"), rows)
    assert up.verdict == studies.REPRODUCED and up.shift_pct > 100 and up.interval[0] > 0
    assert studies.judge(check("lower"), rows).verdict == studies.CONTRADICTED
    assert studies.judge(check("similar"), rows).verdict == studies.CONTRADICTED
    missing = studies.Check("m", "claim", "T", "iozone.write", {"fs": "zfs"}, {"fs": "btrfs"}, "higher")
    assert studies.judge(missing, rows).verdict == studies.UNDECIDED
    assert "not measured in this session" in studies.judge(missing, rows).detail


def test_a_claim_measured_under_other_conditions_is_not_comparable_never_contradicted(tmp_path):
    """Two disks against one, measured on loop images of one disk: the change is shown, the
    verdict names the condition that differed."""
    same = [50.0, 51.0, 49.0, 50.5, 49.5, 50.2]
    store, sid = store_of(tmp_path, {("btrfs", "single", ZLIB, "16M"): [v * 0.7 for v in same],
                                     ("btrfs", "single", PLAIN, "16M"): same})
    rows = report.report_data(store, sid).rows
    separate = dataclasses.replace(check("higher"), conditions={studies.DISKS: "separate"})
    assert studies.judge(separate, rows).verdict == studies.CONTRADICTED  # conditions unknown: judged as measured
    on_loops = studies.judge(separate, rows, measured=studies.session_conditions({"devices": "loop"}))
    assert on_loops.verdict == studies.NOT_COMPARABLE and on_loops.shift_pct < -20
    assert on_loops.detail.endswith("not comparable: the study's disks separate; here loop images on one disk")
    on_disks = studies.judge(separate, rows, measured=studies.session_conditions({"devices": "block"}))
    assert on_disks.verdict == studies.CONTRADICTED


NODATACOW_ZLIB = (("compress", "zlib"), ("mount", "nodatacow,nodatasum"))
# IOzone write (MB/s) of btrfs single, its own pattern, on this machine: on the loop images' own storage
# (runs about the medians a session measured, 835 and 460.7) and on storage paced to 32 MB/s (a session's runs)
OWN_PLAIN = [835.0, 829.4, 841.7, 818.2, 850.3]
OWN_ZLIB = [460.7, 455.1, 466.9, 449.8, 471.2]
PACED_PLAIN = [24.8, 24.9, 28.1, 27.9, 27.5, 24.0, 29.9, 27.5, 28.9, 30.1]
PACED_ZLIB = [249.0, 239.4, 190.4, 210.9, 173.5, 174.5, 247.8, 200.3, 260.4, 230.2]


def test_a_claim_on_the_studys_storage_is_judged_on_cases_paced_to_it(tmp_path):
    """compress raises write on a 31.6 MB/s disk: measured on the loop images' own storage (faster
    than zlib here) it is not comparable, never contradicted, and says how fast b wrote there; with
    the cases paced to the study's rate as well, those decide it, and the others are left out."""
    claim = dataclasses.replace(check("higher"), conditions={studies.STORAGE: "32 MB/s"})
    store, sid = store_of(tmp_path, {("btrfs", "single", ZLIB, "16M"): OWN_ZLIB,
                                     ("btrfs", "single", PLAIN, "16M"): OWN_PLAIN})
    own = studies.judge(claim, report.report_data(store, sid).rows, measured={})
    assert own.verdict == studies.NOT_COMPARABLE and own.shift_pct < -40
    assert own.detail.endswith("not comparable: the study's storage 32 MB/s; here the loop images' own, not slowed "
                               "(b's median iozone.write there 835 MB/s)")
    assert studies.judge(check("higher"), report.report_data(store, sid).rows).verdict == studies.CONTRADICTED
    (tmp_path / "paced").mkdir()
    store, sid = store_of(tmp_path / "paced", {("btrfs", "single", ZLIB, "16M"): OWN_ZLIB,
                                               ("btrfs", "single", PLAIN, "16M"): OWN_PLAIN,
                                               ("btrfs", "single", ZLIB, "16M", 32.0): PACED_ZLIB,
                                               ("btrfs", "single", PLAIN, "16M", 32.0): PACED_PLAIN})
    rows = report.report_data(store, sid).rows
    paced = studies.judge(claim, rows, measured={})
    assert paced.verdict == studies.REPRODUCED and paced.shift_pct > 600  # the study's: +126 %
    assert paced.detail.startswith("220.6 vs 27.7: +706.0% ")
    assert paced.detail.endswith("n=10/10 (1/1 cases); on storage paced to 32 MB/s")
    # a claim without the condition takes the images' own cases only, never the paced ones
    assert studies.judge(check("higher"), rows).detail.startswith("460.7 vs 835: ")


def test_a_claim_on_the_studys_storage_plans_its_paced_tests():
    study = ALL["btrfs-options"]
    [claim] = [c for c in study.checks() if c.id == "compress-raises-write-single"]
    [other] = [c for c in study.checks() if c.id == "btrfs-writes-like-ext4"]
    tests = ["m.py::test_iozone[btrfs-single-compress=zlib-mount=datacow,datasum-cache=drop-16M-512M]",
             "m.py::test_iozone[btrfs-single-compress=no-mount=datacow,datasum-cache=drop-16M-512M]",
             "m.py::test_iozone[btrfs-single-compress=zlib-mount=datacow,datasum-storage=32MBps-cache=drop-16M-128M]",
             "m.py::test_iozone[btrfs-single-compress=no-mount=datacow,datasum-storage=32MBps-cache=drop-16M-128M]"]
    assert launch.claim_tests(claim, tests) == [t.rpartition("::")[2] for t in tests[2:]]
    assert launch.claim_tests(other, tests) == [tests[1].rpartition("::")[2]]
    none_paced = launch.claim_runs(study, tests[:2], {})
    assert ("runs for compress-raises-write-single: the scale's (not comparable here, whatever the runs: the study's "
            "storage 32 MB/s; no case is planned on storage paced to it (--storage-rate))") in none_paced.lines


def test_the_compression_claims_run_on_the_studys_storage_at_the_quick_scale():
    study = ALL["btrfs-options"]
    paced = {c.id for c in study.checks() if c.conditions.get(studies.STORAGE) == "32 MB/s"}
    assert paced == {"compress-raises-write-single", "compress-lost-with-nodatacow"}
    args = study.scale("quick")["args"]
    assert launch.option_value(args, "--storage-rate", "") == "none,32"


def test_a_run_on_paced_storage_is_timed_apart():
    scale = ALL["btrfs-options"].scale("quick")
    paced = "m.py::test_iozone[btrfs-single-compress=no-mount=datacow,datasum-storage=32MBps-cache=drop-16M-128M]"
    own = "m.py::test_iozone[btrfs-single-compress=no-mount=datacow,datasum-cache=drop-16M-512M]"
    shipped = launch.shipped_seconds(scale)
    assert launch.kind(paced) == "test_iozone paced" and launch.kind(own) == "test_iozone"
    assert shipped.run["test_iozone paced"] == 13.8 and shipped.run["test_iozone"] == 4.72
    seconds = launch.planned_seconds(shipped, [paced, own], runs=2)
    assert seconds[launch.test_name(paced)] == pytest.approx(shipped.target["test_iozone"] + 2 * 13.8)
    assert seconds[launch.test_name(own)] == pytest.approx(shipped.target["test_iozone"] + 2 * 4.72)
    # a function the scale times no paced run of: not planned from its unpaced runs, which wait for nothing
    assert launch.planned_seconds(shipped, ["m.py::test_dd_write[btrfs-single-storage=32MBps-1M]"], runs=2) == {}


def test_similar_needs_the_whole_interval_inside_the_tolerance(tmp_path):
    a = [50.0, 50.5, 49.5, 50.2, 49.8, 50.1, 49.9, 50.3, 49.7, 50.0]
    store, sid = store_of(tmp_path, {("btrfs", "single", ZLIB, "16M"): a,
                                     ("btrfs", "single", PLAIN, "16M"): [v * 1.01 for v in a]})
    rows = report.report_data(store, sid).rows
    assert studies.judge(check("similar", 5.0), rows).verdict == studies.REPRODUCED
    noisy = [30.0, 70.0, 45.0, 55.0]
    (tmp_path / "b").mkdir()
    store2, sid2 = store_of(tmp_path / "b", {("btrfs", "single", ZLIB, "16M"): noisy,
                                             ("btrfs", "single", PLAIN, "16M"): list(reversed(noisy))})
    rows2 = report.report_data(store2, sid2).rows
    undecided = studies.judge(check("similar", 5.0), rows2)
    assert undecided.verdict == studies.UNDECIDED
    # the tolerance reads as the claim's definition, not as a result, whatever the verdict
    assert " (claim: within ±5%); not decided: about 664 runs a side would decide it" in undecided.detail
    assert "similar means" not in undecided.detail
    assert studies.judge(check("similar", 5.0), rows).detail.endswith(" (claim: within ±5%)")
    assert "claim:" not in studies.judge(check("higher"), rows).detail


def test_published_numbers_stand_beside_the_matching_medians(tmp_path):
    study = ALL["btrfs-options"]
    store, sid = store_of(tmp_path, {("btrfs", "single", PLAIN, "16M"): [40.0, 42.0, 44.0],
                                     ("btrfs", "raid0", PLAIN, "16M"): [80.0, 81.0, 82.0]})
    data = report.report_data(store, sid)
    found = studies.beside(study, data.rows)
    standard = [b for b in found if b.entry["layout"] == "single" and b.entry["test"] == "write"
                and b.entry["options"] == "mkfs=standard; mount=standard"]
    assert len(standard) == 1 and standard[0].measured == 42.0
    assert standard[0].published_mb_s == pytest.approx(31.586 * 1.024)
    assert studies.ratio_text(standard[0]) == f"{42.0 / (31.586 * 1.024):.2f}"
    assert all(b.entry["fs"] == "btrfs" and b.entry["test"] == "write" for b in found), "only what was measured"
    section = lxml_html.fromstring(f"<div>{page.beside_section(study, data)}</div>")
    # the source table is named once, above its rows; each row says where in it
    assert [h.text_content() for h in section.iter("h3")][0] == "Results table (untitled, only table in the article)"
    [first, *_] = section.iter("table")
    assert [th.text_content() for th in first.iter("th")][0] == "row"
    assert "Results table" not in first.text_content() and "row 5: Btrfs" in first.text_content()
    html = page.preface(study, data, "quick")
    assert "Findings checked" in html and "31.586 MB/s" in html and "fsbench / published" in html
    assert "What this machine cannot run as the study did" in html
    # the header cites the study as its text does, and says what the text does not give
    assert ("<b>Linux Don&#x27;t Need No Stinkin&#x27; ZFS: BTRFS Intro &amp; Benchmarks</b>: author not named in the "
            "source text, 2009 (year not printed in the source text); magazine article (web; only its benchmark page "
            "is in the source text") in html


@pytest.mark.parametrize("name", list(ALL))
def test_a_study_page_speaks_of_the_study_not_of_fsbenchs_seed_files(name, tmp_path):
    """The study's page cites it by title, author (or says there is none) and year, and none of
    what it shows (header, findings, published numbers, caveats) names fsbench's internal seeds."""
    study = ALL[name]
    store, sid = store_of(tmp_path, {("btrfs", "single", PLAIN, "16M"): [40.0, 42.0, 44.0]})
    text = html_text(page.preface(study, report.report_data(store, sid), "quick"))
    assert "seed" not in text.lower()
    assert study.title in text and (study.authors or "author not named in the source text") in text
    assert str(study.year) in text
    shown = ("source", "fs", "layout", "options", "test", "statistic", "unit", "note")  # the published tables' cells
    assert not [e[k] for e in study.published for k in shown if "seed" in str(e.get(k, "")).lower()]


@pytest.mark.parametrize("source, parts", [
    ("Results table (untitled, only table in the article), row 1: Ext3",
     ("Results table (untitled, only table in the article)", "row 1: Ext3")),
    ("Table 2 (Appendix I), row Average, column 64", ("Table 2 (Appendix I)", "row Average, column 64")),
    ("Table 1 (IOzone write results, record 1M, file 16GB)", ("Table 1 (IOzone write results, record 1M, file 16GB)", "")),
])
def test_a_sources_table_and_place(source, parts):
    assert page.source_parts(source) == parts


def html_text(page_html: str) -> str:
    return lxml_html.fromstring(f"<div>{page_html}</div>").text_content()


def test_a_published_value_marked_suspect_gets_its_note_and_no_ratio(tmp_path):
    """The article prints row 20's reread as 129928 in a column of MB/s around 130: a KB/s figure."""
    study = ALL["btrfs-options"]
    store, sid = store_of(tmp_path, {("btrfs", "raid0", ZLIB, "16M"): [4600.0, 4638.0, 4700.0],
                                     ("btrfs", "raid0", PLAIN, "16M"): [4500.0, 4550.0, 4600.0]}, "iozone.reread")
    data = report.report_data(store, sid)
    found = {b.entry["options"]: b for b in studies.beside(study, data.rows) if b.entry["test"] == "reread"}
    typo = found["mkfs=two disks, raid0; mount=-o compress"]
    assert typo.entry["value"] == 129928 and typo.measured == 4638.0 and typo.published_mb_s is None
    assert studies.ratio_text(typo) == "not compared (see the note below)"
    assert studies.suspect_note(typo).startswith("printed as 129928 in the Reread MB/s column, 1000x")
    plain = found["mkfs=two disks, raid0; mount=standard"]
    assert studies.ratio_text(plain) == f"{4550.0 / (132.024 * 1.024):.2f}", "the others keep their ratio"
    cells = {tuple(td.text_content() for td in tr.iter("td")) for tr in
             lxml_html.fromstring(f"<div>{page.preface(study, data, 'quick')}</div>").iter("tr")}
    # one test a configuration: a row per number; fs, layout, parameters and statistic said once above
    [row] = [c for c in cells if len(c) == 8 and c[4] == "129928 MB/s"]
    assert row[5] == "" and row[6] == "4638" and row[7] == "not compared (see the note below)"
    assert row[2] == "compress=zlib,mount=datacow,datasum", "the options fsbench's case ran with"
    assert ("Every row of this table: fs btrfs; layout two-disk raid0; parameters record_size=16M, file_size=2G; "
            "statistic single_result.") in html_text(page.beside_section(study, data))
    assert ("Not compared: Results table (untitled, only table in the article), row 20: Btrfs two disks, raid0 -o "
            "compress, reread 129928 MB/s: printed as 129928") in html_text(page.preface(study, data, "quick"))
    assert studies.suspect_note(plain) is None


IOZONE_TESTS = ("write", "rewrite", "read", "reread")


def iozone_store(tmp_path: Path, cases: list[tuple], cached: str = "reread") -> tuple[Store, int]:
    """A session of the btrfs study's IOzone cases (fs, layout, options), each measuring write,
    rewrite, read and reread at 16M records; the page cache served each case's `cached` test
    (5 % of its bytes reached the disks, as cache_check records it)."""
    store = Store(tmp_path / "fsbench.db")
    sid = store.start_session("t-1", {"argv": []}, {"kernel": "6.1"})
    params = {"record": "16M", "file": "512M"}
    for fs, layout, options in cases:
        case_id = "-".join([fs, layout, *(f"{k}={v}" for k, v in options)])
        spec = {"fs": fs, "layout": layout, "options": dict(options), "id": case_id}
        row = store.case_row(sid, f"benchmarks/test_iozone.py::test_iozone[{case_id}-16M]", case_id, spec, "iozone",
                             params, "drop", "random", {"host": {"kernel": "6.18"}})
        for value in (40.0, 42.0, 44.0):
            store.add_run(row, False, "t", 1.0, "drop", [
                *(Metric(f"iozone.{t}", value * (k + 1), "MB/s", Direction.HIGHER, params)
                  for k, t in enumerate(IOZONE_TESTS)),
                Metric("disk.share", 5.0, "%", Direction.HIGHER, {**params, "metric": f"iozone.{cached}"})])
        store.finish_case(row, "done", "runs")
    store.finish_session(sid, "complete")
    return store, sid


def test_published_numbers_of_several_tests_are_one_row_per_configuration(tmp_path):
    """The article's row 5 gives write, rewrite, read and reread of one configuration: one row of
    the page, the four tests side by side (published, fsbench, ratio each), what every row shares
    said once above, and the reread the page cache served marked."""
    study = ALL["btrfs-options"]
    store, sid = iozone_store(tmp_path, [("btrfs", "single", PLAIN), ("btrfs", "raid0", PLAIN)])
    data = report.report_data(store, sid)
    items = studies.beside(study, data.rows)
    assert len(items) == 12  # rows 5 and 7 (standard and -m single: one fsbench case) and 10, four tests each
    section = lxml_html.fromstring(f"<div>{page.beside_section(study, data)}</div>")
    [table] = section.find_class("published")
    first, second = list(table.iter("thead"))[0].iter("tr")
    assert [th.text_content() for th in first] == ["row", "layout", "options", *IOZONE_TESTS]
    assert [th.text_content() for th in second] == ["published", "fsbench", "ratio"] * 4
    rows = [[td for td in tr.iter("td")] for tr in table.iter("tr")][2:]
    assert [r[0].text_content() for r in rows] == [
        "row 5: Btrfs Standard Standard", "row 7: Btrfs -m single standard", "row 10: Btrfs two disks, raid0 standard"]
    row5 = [td.text_content() for td in rows[0]]
    assert row5[3:6] == [f"{31.586 * 1.024:.4g}", "42", f"{42 / (31.586 * 1.024):.2f}"]
    assert rows[0][3].get("title") == "as published: 31.586 MB/s"
    assert row5[12:] == [f"{104.106 * 1.024:.4g}", "168 (cache)", f"{168 / (104.106 * 1.024):.2f}"]
    assert "cache" in rows[0][13].get("class") and "cache" not in rows[0][4].get("class")
    text = section.text_content()
    assert ("Every row of this table: fs btrfs; fsbench ran compress=no,mount=datacow,datasum; parameters "
            "record_size=16M, file_size=2G; statistic single_result.") in text
    assert "(cache): the page cache served fsbench's figure" in text
    assert text.count("Results table (untitled, only table in the article)") == 1


def test_published_numbers_group_only_where_that_hides_none():
    """A configuration with one test keeps a row per number; one with a test twice (two rows of a
    source table read alike) too, so that no number is lost."""
    entry = {"source": "Table 1, row 1: x", "fs": "ext4", "layout": "single", "options": "", "params": {},
             "statistic": "mean", "value": 1.0, "unit": "MB/s"}
    write, read = ({**entry, "test": t} for t in ("write", "read"))
    assert page.by_configuration([studies.Beside(write, 1.0, 2.0, 1), studies.Beside(read, 1.0, 2.0, 1)]) == {
        ("row 1: x", "ext4", "single", "", "", "", "mean"): {"write": studies.Beside(write, 1.0, 2.0, 1),
                                                              "read": studies.Beside(read, 1.0, 2.0, 1)}}
    assert page.by_configuration([studies.Beside(write, 1.0, 2.0, 1)]) is None
    assert page.by_configuration([studies.Beside(write, 1.0, 2.0, 1), studies.Beside(write, 3.0, 2.0, 1)]) is None
    assert studies.Beside(write, 1.0, 2.0, 2, from_cache=1).cache_mark == " (cache: 1 of 2)"
    # past four tests side by side a table would not fit 1400 px: six make two tables of three
    assert page.tests_in_tables(list("abcdef")) == [["a", "b", "c"], ["d", "e", "f"]]
    assert page.tests_in_tables(["write", "rewrite", "read", "reread"]) == [["write", "rewrite", "read", "reread"]]


LZ4, OFF = (("compression", "lz4"),), (("compression", "off"),)


def test_published_changes_stand_beside_fsbenchs_change(tmp_path):
    study = ALL["compression"]
    store, sid = store_of(tmp_path, {("zfs", "single", LZ4, "1M", "vm"): [300.0, 310.0, 320.0],
                                     ("zfs", "single", OFF, "1M", "vm"): [100.0, 100.0, 100.0]})
    found = studies.changes_beside(study, report.report_data(store, sid).rows)
    writes = [c for c in found if c.entry["test"] == "write"]
    assert writes and all(c.measured_pct == pytest.approx(210.0) for c in writes)
    assert any(c.entry["value"] >= 400 for c in writes), "the study's +400..900 % beside it"


def test_published_changes_are_labelled_with_what_fsbench_ran_and_where(tmp_path):
    """zfs-fuse has no lz4: the study's 'compression=lz4 vs off' rows say fsbench ran both in the
    emulated virtual machine."""
    study = ALL["compression"]
    store, sid = store_of(tmp_path, {("zfs", "single", LZ4, "1M", "vm"): [300.0, 310.0, 320.0],
                                     ("zfs", "single", OFF, "1M", "vm"): [100.0, 100.0, 100.0]})
    data = report.report_data(store, sid)
    found = studies.changes_beside(study, data.rows)
    assert found and {c.entry["options"] for c in found} == {"compression=lz4 vs off"}
    ran = "compression=lz4 in vm (emulated) vs compression=off in vm (emulated)"
    assert {c.ran for c in found} == {ran}
    cells = [[td.text_content() for td in tr.iter("td")]
             for tr in lxml_html.fromstring(f"<div>{page.preface(study, data, 'quick')}</div>").iter("tr")]
    assert ["compression=lz4 vs off", ran] in [c[3:5] for c in cells if len(c) == 10]


def test_a_change_between_an_emulated_and_a_native_case_is_not_compared(tmp_path):
    study = ALL["compression"]
    store, sid = store_of(tmp_path, {("zfs", "single", LZ4, "1M", "vm"): [300.0, 310.0, 320.0],
                                     ("zfs", "single", OFF, "1M"): [100.0, 100.0, 100.0]})
    found = studies.changes_beside(study, report.report_data(store, sid).rows)
    assert found and all(c.measured_pct is None and c.n == (0, 0) for c in found)
    assert all(c.ran.startswith("compression=lz4 in vm (emulated) vs compression=off (a was measured emulated")
               for c in found), found[0].ran


LZ4_CHECK = studies.Check("lz4", "claim", "T", "iozone.write", {"fs": "zfs", "options": {"compression": "lz4"}},
                          {"fs": "zfs", "options": {"compression": "off"}}, "higher")
FAST, SLOW = [300.0, 310.0, 320.0, 305.0], [100.0, 101.0, 99.0, 100.5]


def test_a_finding_within_the_virtual_machine_is_decided_and_says_where(tmp_path):
    store, sid = store_of(tmp_path, {("zfs", "single", LZ4, "1M", "vm"): FAST,
                                     ("zfs", "single", OFF, "1M", "vm"): SLOW})
    found = studies.judge(LZ4_CHECK, report.report_data(store, sid).rows)
    assert found.verdict == studies.REPRODUCED
    assert found.detail.endswith("(1/1 cases); in vm, emulated (TCG)"), found.detail


def test_a_finding_across_emulated_and_native_cases_is_not_decided(tmp_path):
    """lz4 in the emulated virtual machine three times as fast as zfs-fuse off on the host says
    nothing of lz4: the two are never compared."""
    store, sid = store_of(tmp_path, {("zfs", "single", LZ4, "1M", "vm"): FAST, ("zfs", "single", OFF, "1M"): SLOW})
    found = studies.judge(LZ4_CHECK, report.report_data(store, sid).rows)
    assert found.verdict == studies.UNDECIDED and found.shift_pct is None
    assert found.detail == ("not compared: a was measured emulated (in vm, a virtual machine under TCG), b natively; "
                            "numbers measured under QEMU's CPU emulation compare only with each other")


def test_a_side_measured_both_ways_is_compared_where_the_other_side_was(tmp_path):
    """ext4 on the host and (md RAID1) in the virtual machine against ZFS on the host: the host's
    ext4 only, and the line names the case left out."""
    check = studies.Check("x", "claim", "T", "iozone.write", {"fs": "ext4"}, {"fs": "zfs"}, "higher")
    store, sid = store_of(tmp_path, {("ext4", "single", (), "1M"): FAST, ("ext4", "raid1", (), "1M", "vm"): SLOW,
                                     ("zfs", "single", OFF, "1M"): SLOW})
    found = studies.judge(check, report.report_data(store, sid).rows)
    assert found.verdict == studies.REPRODUCED
    assert "(1/1 cases); left out, measured emulated: vm-ext4-raid1" in found.detail, found.detail


def test_a_study_page_says_where_its_cases_ran(tmp_path):
    study = ALL["compression"]
    store, sid = store_of(tmp_path, {("zfs", "single", LZ4, "1M", "vm"): FAST, ("btrfs", "single", (), "1M"): SLOW},
                          argv=("--kernel=host+vm",))
    html = page.where_section(report.report_data(store, sid))
    rows = sorted([td.text_content() for td in tr.iter("td")]
                  for tr in lxml_html.fromstring(f"<div>{html}</div>").iter("tr"))[1:]
    assert rows == [["btrfs-single", "the host's kernel 6.18", "natively", ""],
                    ["vm-zfs-single-compression=lz4", "virtual machine vm: kernel 6.1.0-56-amd64 in QEMU",
                     "emulated (QEMU's TCG)", "OpenZFS 2.1.11-1"]]
    assert "<h2>Where the cases ran</h2>" in page.preface(study, report.report_data(store, sid), "quick")


def test_a_page_of_host_cases_only_says_where_only_when_its_arguments_placed_cases(tmp_path):
    native = {("zfs", "single", OFF, "1M"): SLOW}
    store, sid = store_of(tmp_path / "host", native)
    assert page.where_section(report.report_data(store, sid)) == ""
    store, sid = store_of(tmp_path / "placed", native, argv=("--kernel", "host+vm"))
    html = page.where_section(report.report_data(store, sid))
    assert "No case of this session ran in a virtual machine" in html and "zfs-fuse" in html


@pytest.mark.parametrize("name", list(ALL))
def test_the_published_numbers_section_always_has_its_table(name, tmp_path):
    """Whatever the session measured and whatever the study published, the section renders its
    table of published numbers; with no row to show, one row says why."""
    study = ALL[name]
    store, sid = store_of(tmp_path, {("ext2", "single", (), "16M"): [40.0, 42.0, 44.0]}, "iozone.no_such_test")
    html = page.beside_section(study, report.report_data(store, sid))
    tree = lxml_html.fromstring(f"<div>{html}</div>")
    [first, *_] = tree.iter("table")
    heads = [th.text_content() for th in first.iter("th")]
    assert heads[:5] == ["source", "fs", "layout", "options", "fsbench ran"] and "fsbench / published" in heads
    [why] = [td for td in first.iter("td")]
    assert why.get("colspan") == str(len(heads)) and why.text_content()


# --- the plan: which cases run in a virtual machine, and why ------------------------------------

#: this machine's kind: zfs-fuse, no md driver, every tool
FUSE_HOST = Host("6.1.0", frozenset({"ext4", "xfs", "btrfs", "fuse"}), frozenset(TOOLS) | {"zfs-fuse", "mdadm"},
                 has_md=False, zfs_module=False, is_root=True, ram_bytes=8 << 30)


def planned(name: str, host: Host = FUSE_HOST, missing: str | None = None, accel: str = "tcg") -> list[str]:
    study = ALL[name]
    specs, kernels = launch.planned_cases(study.scale("quick")["args"], host)
    return launch.placement_lines(study, specs, fallback(kernels), host, missing, accel, "2.1.11-1")


def test_the_compression_plan_puts_both_zfs_cases_in_the_virtual_machine_and_says_why():
    lines = planned("compression")
    assert lines[0].startswith("vm-zfs-single-compression=lz4 runs in the virtual machine: zfs-fuse (pool version "
                               "23) has no compression=lz4")
    assert lines[1] == ("vm-zfs-single-compression=off runs in the virtual machine: the host could run it, but it is "
                        "compared with the zfs single cases there")
    assert lines[2].endswith("in QEMU, emulated: QEMU's TCG, no usable KVM here; its numbers compare only with each "
                             "other; OpenZFS 2.1.11-1 from ./fsbench.sh setup --kernel=vm")
    assert len(lines) == 3  # every ZFS finding compares ZFS with ZFS: none is set apart


def test_a_virtual_machine_that_cannot_boot_is_named_with_its_reason():
    lines = planned("compression", missing="virtme-ng is not installed (pip install 'pytest-fsbench[vm]')")
    assert lines[-1] == ("the virtual machine cannot boot here (virtme-ng is not installed (pip install "
                         "'pytest-fsbench[vm]')): its 2 cases will skip with that reason")


def test_the_plan_names_findings_that_would_set_emulated_numbers_against_the_hosts():
    study = ALL["zfs-features"]
    args = [*study.scale("quick")["args"], "--fs-opt=zfs:compression=lz4"]
    specs, kernels = launch.planned_cases(args, FUSE_HOST)
    lines = launch.placement_lines(study, specs, fallback(kernels), FUSE_HOST, None, "tcg", None)
    assert sum("runs in the virtual machine" in line for line in lines) == 6  # every ZFS case: lz4 takes its siblings
    assert "no OpenZFS userland (./fsbench.sh setup --kernel=vm extracts it)" in lines[-2]
    assert lines[-1] == "not decided, as they would set emulated numbers against the host's: plain-zfs-below-ext4"
    kvm = launch.placement_lines(study, specs, fallback(kernels), FUSE_HOST, None, "kvm", None)
    assert not kvm[-1].startswith("not decided")  # the judge sets apart emulated numbers only, as fsbench does


@pytest.mark.parametrize("host", [FUSE_HOST, dataclasses.replace(FUSE_HOST, zfs_module=True)])
def test_zfs_features_needs_no_virtual_machine_for_what_zfs_fuse_expresses(host):
    """lzjb, dedup and ashift 12/13 are zfs-fuse's too; with OpenZFS on the host nothing moves either."""
    assert planned("zfs-features", host) == [
        "every case runs under the host's kernel, which can run them all (none goes to the virtual machine)"]
    assert planned("compression", dataclasses.replace(FUSE_HOST, zfs_module=True)) == planned("zfs-features")


def test_a_study_without_host_plus_vm_has_no_placement_lines():
    assert launch.placement(ALL["raid-filesystems"], ALL["raid-filesystems"].scale("quick")["args"]) == []


def test_the_kernel_of_the_users_arguments_replaces_the_studys_in_either_form(tmp_path):
    args = launch.study_args(ALL["compression"], "quick", ["--kernel", "vm"], tmp_path)
    assert launch.option_value(args, "--kernel", "host") == "vm"
    assert not any(arg.startswith("--kernel=") for arg in args)


def test_an_undecided_claim_whose_cases_ran_to_the_budget_says_so(tmp_path):
    noisy = [30.0, 70.0, 45.0, 55.0]
    store, sid = store_of(tmp_path, {("btrfs", "single", ZLIB, "16M"): noisy,
                                     ("btrfs", "single", PLAIN, "16M"): list(reversed(noisy))})
    rows = report.report_data(store, sid).rows
    assert "--max-runs" not in studies.judge(check("similar", 5.0), rows).detail
    spent = [dataclasses.replace(r, stopped_by="max-runs") for r in rows]
    detail = studies.judge(check("similar", 5.0), spent).detail
    assert "not decided: about 664 runs a side" in detail and "ran to the session's --max-runs" in detail


def test_an_undecided_claim_never_asks_for_the_runs_it_already_had():
    """3 runs a side whose interval is narrow enough, but whose rank test cannot reach the level
    at 3 runs (seen: "about 2 runs a side would decide it ... (3 ran)")."""
    check = studies.Check("x", "", "", "dd.write", {}, {}, "higher", 10.0, "study", {}, 30.0)
    detail = studies.runs_to_decide(check, 64.7, (-4.5, 92.9), 3)
    assert detail == "; not decided: about 4 runs a side would decide it at the noise measured here (3 ran)"


@pytest.mark.parametrize("spec", [CaseSpec("btrfs", "single"), CaseSpec("ext4", "raid1", kernel="uml"),
                                  CaseSpec("btrfs", "single", storage_rate=32.0),
                                  CaseSpec("xfs", "raid5", kernel="vm", storage_rate=32.0)])
def test_a_plan_and_the_session_s_estimate_key_a_case_s_kind_alike(spec):
    """The plan's seconds by kind and the session's pace by kind must meet (a paced case was
    'test_iozone paced' to the plan and 'test_iozone' to the estimate, its pace mixed with the
    unpaced cases')."""
    class Item:  # what terminal.kind_of reads of a pytest item
        originalname = name = "test_iozone"
        callspec = type("CallSpec", (), {"params": {"fsbench_spec": spec}})()

    test_id = f"benchmarks/test_iozone.py::test_iozone[{spec.id}-cache=drop-16M-512M]"
    guests = {"uml", "vm"}
    assert launch.planned_kind(test_id, guests) == terminal.kind_of(Item())


def test_a_plans_command_fits_its_width_and_runs_pasted():
    """Issue 35: the plan's pytest line was over 1000 columns; its lines, pasted, run the command."""
    import subprocess

    argv = ["--pyargs", "pytest_fsbench.benchmarks.test_iozone", "-k", "not raid and (dd)", "--runs=6",
            "--until-ci-case=test_iozone[ext4-single-cache=drop-16M-512M]@iozone.write=2.2%",
            "--store=/a dir/it's.db", "--data=50%", "--fs-opt=btrfs:compress=zstd,space_cache=v2"] * 3
    lines = launch.command_lines("plan: ", ["printf", "%s\\n", *argv], 100)
    assert len(lines) > 3 and all(len(line) <= 100 for line in lines), lines
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    assert all(line.startswith(launch.CONTINUED) for line in lines[1:])
    pasted = "\n".join(lines).removeprefix("plan: ")
    assert subprocess.run(["sh", "-c", pasted], capture_output=True, text=True, check=True).stdout.splitlines() == argv
    assert launch.command_lines("plan: ", ["pytest", "-x"], 80) == ["plan: pytest -x"]
