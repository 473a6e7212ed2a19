"""The HTML report's figures and tables, on two real stored sessions (tests/data/report/: ext4
and btrfs, dd and a two-record IOzone sweep, made on a 2-core VM; see README.txt there)."""

from __future__ import annotations

import dataclasses
import io
import re
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from pytest_fsbench.measure.progress import unwrap
from lxml import etree, html

from pytest_fsbench import cli
from pytest_fsbench.views import figures, report
from pytest_fsbench.views.tables import unstack
from pytest_fsbench.metrics import Direction
from pytest_fsbench.verdicts.stats import summarize
from pytest_fsbench.store.results import Store

DATA = Path(__file__).resolve().parents[2] / "data" / "report"


@pytest.fixture
def store(tmp_path) -> Store:
    db = tmp_path / "sessions.db"
    shutil.copy(DATA / "sessions.db", db)
    return Store(db, create=False)


def test_a_box_plots_drawn_median_is_the_stores_median(store):
    data = report.report_data(store, 1)
    groups = report.box_groups(data.rows)
    drawn = [fig for name, _, fig in report.figure_list(data) if name.startswith("box-")]
    assert len(drawn) == len(groups) > 0
    for fig, rows in zip(drawn, groups.values()):
        medians = {line.get_gid(): line.get_xdata()[0] for line in fig.axes[0].get_lines()
                   if (line.get_gid() or "").startswith("median-")}
        assert medians == {f"median-{i}": pytest.approx(summarize(r.series.values).median) for i, r in enumerate(rows)}
        for i, r in enumerate(rows):
            [points] = [c for c in fig.axes[0].collections if c.get_gid() == f"samples-{i}"]
            assert sorted(points.get_offsets()[:, 0]) == pytest.approx(sorted(r.series.values))


def test_the_record_size_chart_has_one_point_per_record_size_measured(store):
    data = report.report_data(store, 1)
    [(name, _, fig)] = [f for f in report.figure_list(data) if f[0].startswith("record-")]
    records = {r.workload_params["record"] for r in data.rows if r.series.key.workload == "iozone"}
    assert records == {"64K", "1M"}
    curves = [line for ax in fig.axes for line in ax.get_lines() if (line.get_gid() or "").startswith("curve-")]
    assert curves and all(len(line.get_xdata()) == len(records) for line in curves)
    assert sorted(curves[0].get_xdata()) == [64 * 1024, 1 << 20]
    assert all(ax.get_xscale() == "log" for ax in fig.axes if ax.get_visible())


def test_a_change_table_row_is_fsbench_compares(store):
    out = io.StringIO()
    with redirect_stdout(out):
        status = cli.main(["compare", "1", "2", f"--store={store.path}"])
    lines = unwrap(unstack(out.getvalue().splitlines()))  # a row stacked to fit the terminal read whole
    header = re.split(r"\s{2,}", next(line for line in lines if line.startswith("case ")))
    once = dict(re.findall(r"\b(\w+) of every row: ([^\s;]+)", " ".join(lines)))  # a column said once below the table
    compare_rows = [{**once, **dict(zip(header, re.split(r"\s{2,}", line.strip())))} for line in lines
                    if line.startswith("test_")]
    page = html.fromstring(report.render(report.report_data(store, 2, [1], "1")))
    [table] = [t for t in page.iter("table") if "verdict" in t.text_content()]
    html_header = [th.text_content() for th in table.iter("th")]
    html_header[html_header.index("new") - 1] = "base"  # the report names the baseline: "1"
    html_rows = [dict(zip(html_header, [td.text_content().strip() for td in tr.iter("td")]))
                 for tr in table.iter("tr") if tr.find("td") is not None]
    assert compare_rows and [{k: row[k] for k in html_header if k in row} for row in compare_rows] == html_rows
    compare_rows = [[row[k] for k in html_header] for row in compare_rows]
    assert status == any(row[-1] == "worse" for row in compare_rows)  # exit 1 on a significantly worse one
    significant = [tr.get("class") for tr in table.iter("tr") if tr.find("td") is not None]
    assert significant == [row[-1] if "*" in row[6] else None for row in compare_rows]


def test_the_forest_plot_draws_each_change_and_the_allowed_threshold(store):
    data = report.report_data(store, 2, [1], "1", allowed_pct=5.0)
    [(_, _, fig)] = [f for f in report.figure_list(data) if f[0] == "forest"]
    lines = fig.axes[0].get_lines()
    marks = [line for line in lines if (line.get_gid() or "").startswith("change-")]
    assert [m.get_xdata()[0] for m in marks] == pytest.approx([cmp.shift_pct for _, _, cmp in data.changes])
    assert sorted(line.get_xdata()[0] for line in lines if line.get_gid() == "allowed") == [-5.0, 5.0]


def test_the_page_is_one_file_with_every_figure_inline_and_the_system_it_ran_on(store):
    data = report.report_data(store, 2, [1], "1")
    page = report.render(data)
    doc = html.fromstring(page)
    assert len(doc.findall(".//figure")) == len(report.figure_list(data))
    assert all(f.find("{http://www.w3.org/2000/svg}svg") is not None or f.find("svg") is not None
               for f in doc.findall(".//figure"))
    assert not re.search(r"""(src|href)=["'](?!#|data:)""", page), "nothing outside the file"
    text = doc.text_content()
    manifest = store.session_export(2)["session"]["manifest"]
    assert manifest["kernel"] in text and manifest["cpu"] in text and "command line" in text
    assert "higher is better" in page and "MB/s (10^6 B/s)" in page
    machine = doc.xpath("//h2[.='The machine and the session']/following-sibling::table[1]")[0]
    assert machine.find("thead") is None and machine.xpath(".//tr[1]/td[1]")[0].text_content() == "host"


def test_figures_also_as_png_or_svg_files(store, tmp_path):
    data = report.report_data(store, 1)
    written = report.write_figures(data, tmp_path / "png", "png")
    assert len(written) == len(report.figure_list(data))
    assert all(p.suffix == ".png" and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)
    [svg] = report.write_figures(data, tmp_path / "svg", "svg")[:1]
    assert etree.parse(str(svg)).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    with pytest.raises(ValueError, match="choose png or svg"):
        figures.save(report.figure_list(data)[0][2], tmp_path / "x", "pdf")


def test_a_session_that_measured_nothing_says_so(tmp_path):
    empty = Store(tmp_path / "empty.db")
    sid = empty.start_session("t-0", {"argv": []}, {"kernel": "6.1"})
    page = report.render(report.report_data(empty, sid))
    assert "This session measured nothing." in page and "<figure" not in page


def test_box_plot_and_forest_plot_on_given_samples():
    fig = figures.box_plot("t", [("a", [1.0, 2.0, 9.0]), ("b", [4.0, 4.0])], "ms", Direction.LOWER)
    assert "lower is better" in fig.axes[0].get_xlabel()
    medians = [line.get_xdata()[0] for line in fig.axes[0].get_lines() if (line.get_gid() or "").startswith("median")]
    assert medians == [2.0, 4.0]
    svg = figures.svg(fig)
    assert svg.startswith("<svg") and 'id="median-0"' in svg


def test_report_command_line_errors_are_one_line(store, tmp_path, capsys):
    assert cli.main(["report", "1", f"--store={store.path}", "-o", str(tmp_path / "no" / "r.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["report", "1", "--compare=1", f"--store={store.path}", "-o", str(tmp_path / "r.html")]) == 2
    assert "that is the reported session itself" in capsys.readouterr().err
    (tmp_path / "taken").write_text("")
    assert cli.main(["report", "1", f"--store={store.path}", "-o", str(tmp_path / "r.html"), "--figures",
                     str(tmp_path / "taken")]) == 2
    assert "is not a directory; name a directory" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists(), "a bad option writes nothing"


def texts_outside(fig) -> list[str]:
    """The titles and legend texts a figure draws beyond its left or right edge (cut off)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    texts = [fig._suptitle] + [ax.title for ax in fig.axes if ax.get_visible()] + [
        ax._left_title for ax in fig.axes if ax.get_visible()] + [t for legend in fig.legends for t in legend.get_texts()]
    return [t.get_text() for t in texts if t is not None and t.get_text()
            and not (0 <= t.get_window_extent(renderer).x0 and t.get_window_extent(renderer).x1 <= fig.bbox.width)]


def test_long_titles_wrap_inside_the_figure_and_keep_every_word():
    title = ("iozone.rewrite [file=128M,processes=2,record=64K,stride=17,tests=write,rewrite,read,reread,"
             "random_read,random_write,stride_read] (iozone)")
    labels = ["test_iozone[ext4-single-drop-random-128M-64K-2]", "test_iozone[btrfs-single-drop-random-128M-64K-2]"]
    box = figures.box_plot(title, [(label, [1.0, 2.0, 3.0]) for label in labels], "MB/s", Direction.HIGHER)
    assert texts_outside(box) == []
    drawn = box._suptitle.get_text()
    assert "\n" in drawn and re.sub(r"\s", "", drawn) == re.sub(r"\s", "", title), "wrapped, nothing cut"
    assert box.get_size_inches()[1] > figures.box_plot("t", [(label, [1.0, 2.0, 3.0]) for label in labels], "MB/s",
                                                        Direction.HIGHER).get_size_inches()[1], "the plot keeps its height"
    point = figures.CurvePoint
    panels = {"iozone.write": {f"btrfs-single cache=drop data=random variant={i}": [point(65536, 1, 1, 1),
                                                                                    point(1 << 20, 2, 2, 2)]
                               for i in range(4)}}
    curves = figures.size_curves("iozone [file=128M,processes=2,stride=17]: throughput against record size", panels,
                                 "MB/s", Direction.HIGHER)
    assert texts_outside(curves) == []
    forest = figures.forest_plot("change vs sessions 3, 4, 5, 6, 7, 8, 9, 10, 11 and 12 of the nightly baseline "
                                 "of the raid10 machine (90% intervals)", [figures.Change("a", 1.0, -1.0, 3.0, "not significant", False)])
    assert texts_outside(forest) == []
    assert figures.wrap("short", 5.0) == "short"
    assert all(figures.text_width(line) <= 1.0 for line in figures.wrap("x" * 80, 1.0).split("\n"))


def test_the_reports_figures_draw_no_title_or_legend_outside(store):
    data = report.report_data(store, 2, [1], "1", allowed_pct=5.0)
    for name, title, fig in report.figure_list(data):
        assert texts_outside(fig) == [], name


def glance_row(fs: str, values: list[float]) -> report.Row:
    from pytest_fsbench.store.results import Series, SeriesKey

    test = f"benchmarks/test_iozone.py::test_iozone[{fs}-single-64K]"
    key = SeriesKey(test, "iozone", '{"record": "64K"}', "iozone.stride_read", '{"record": "64K"}')
    series = Series(key, f"{fs}-single", "MB/s", Direction.HIGHER, tuple(values))
    return report.Row(series, summarize(values), report.short_test(test), {"record": "64K"}, 0, None, None, None)


def glance_cells(page: str) -> list[list[str]]:
    """The at-a-glance table as text: a group's heading row is one cell."""
    [table] = html.fromstring(page).find_class("glance")
    return [[cell.text_content() for cell in row] for row in table.iter("tr")]


def test_at_a_glance_says_whether_the_others_differ_from_the_best_significantly():
    from pytest_fsbench.verdicts.stats import compare

    btrfs = [4949.0, 5476.0, 7591.0, 5200.0, 6100.0]  # overlapping runs: a lower median, nothing to tell apart
    ext4 = [2999.0, 3340.0, 5738.0, 5300.0, 3100.0]
    apart = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    data = report.Report(1, {}, [], [glance_row("ext4", ext4), glance_row("xfs", apart), glance_row("btrfs", btrfs)])
    overlap, separate = compare(btrfs, ext4, Direction.HIGHER), compare(btrfs, apart, Direction.HIGHER)
    assert not overlap.significant and separate.verdict == "worse"
    assert glance_cells(report.at_a_glance(data)) == [
        ["case", "median", "change", "90% CI", "vs the best", "CV"],
        ["iozone.stride_read [record=64K] (iozone): MB/s, higher is better"],
        ["test_iozone[btrfs-single-64K]", "5476", "best", "", "", f"{summarize(btrfs).cv * 100:.0f}%"],
        ["test_iozone[ext4-single-64K]", "3340", f"{overlap.shift_pct:+.1f}%",
         f"[{overlap.pct_ci[0]:+.1f}%, {overlap.pct_ci[1]:+.1f}%]", "not significant", f"{summarize(ext4).cv * 100:.0f}%"],
        ["test_iozone[xfs-single-64K]", "1000", f"{separate.shift_pct:+.1f}%",
         f"[{separate.pct_ci[0]:+.1f}%, {separate.pct_ci[1]:+.1f}%]", "worse", "1%"]]
    # the change is the comparison's estimated shift, as in every other view, not the medians' ratio
    assert f"{overlap.shift_pct:+.1f}%" != "-39.0%"


def test_at_a_glance_ranks_a_time_lowest_first_and_says_when_runs_are_too_few():
    def timed(fs: str, values: list[float]) -> report.Row:
        row = glance_row(fs, values)
        return dataclasses.replace(row, series=dataclasses.replace(row.series, unit="s", direction=Direction.LOWER))

    data = report.Report(1, {}, [], [timed("ext4", [3.0, 3.2]), timed("btrfs", [2.0, 2.1])])
    assert glance_cells(report.at_a_glance(data))[1:] == [
        ["iozone.stride_read [record=64K] (iozone): s, lower is better"],
        ["test_iozone[btrfs-single-64K]", "2.05", "best", "", "", "3%"],
        ["test_iozone[ext4-single-64K]", "3.1", "+51.2%", "", "too few runs to tell (n=2/2)", "5%"]]
    assert report.at_a_glance(report.Report(1, {}, [], [timed("ext4", [3.0, 3.2])])) == ""


def test_a_figure_served_from_cache_is_marked_and_never_ranked_best():
    """The page cache's 900 MB/s measured the memory: the storage's 400 MB/s is the best figure
    (a study's page ranked an ext3 reread of 5,601 MB/s, served from cache, first)."""
    cached = dataclasses.replace(glance_row("ext4", [900.0, 950.0]), disk_share=3.0)
    stored = dataclasses.replace(glance_row("btrfs", [400.0, 420.0]), disk_share=99.0)
    data = report.Report(1, {}, [], [cached, stored])
    cells = glance_cells(report.at_a_glance(data))[2:]
    assert [row[0] for row in cells] == [
        "test_iozone[btrfs-single-64K]", "test_iozone[ext4-single-64K] (served from cache)"]
    assert cells[0][2] == "best"
    # nor compared with the storage's best as if it were "better": it measured the memory
    assert cells[1][2:5] == ["", "", "not compared"]
    [table] = html.fromstring(report.summary_table(data)).iter("table")
    assert [[cell.text_content() for cell in row][-1] for row in table.iter("tr")] == [
        "from", "served from cache (3% reached the disks)", "storage"]


def test_where_the_page_cache_served_every_figure_none_is_ranked_best():
    """Every reread of a study session came from the page cache: the highest is only the highest,
    the others compared with it (memory with memory), and no row is set in bold as the best."""
    high = dataclasses.replace(glance_row("ext3", [13000.0, 13100.0, 12900.0]), disk_share=2.0)
    low = dataclasses.replace(glance_row("btrfs", [5700.0, 5750.0, 5800.0]), disk_share=4.0)
    page = report.at_a_glance(report.Report(1, {}, [], [low, high]))
    cells = glance_cells(page)[2:]
    assert [row[:3] for row in cells] == [["test_iozone[ext3-single-64K] (served from cache)", "13000", "highest"],
                                         ["test_iozone[btrfs-single-64K] (served from cache)", "5750",
                                          cells[1][2]]]
    assert cells[1][2].startswith("-") and cells[1][4] == "worse"
    [table] = html.fromstring(page).find_class("glance")
    assert [tr.get("class") for tr in table.iter("tr")][2:] == [None, None]


def paired_store(tmp_path: Path) -> tuple[Store, int]:
    """A session of a case and its --paired variant, 6 rounds each, stored as the plugin stores
    them: the variant's manifest names its reference and the rounds."""
    from pytest_fsbench.verdicts.baseline import PAIRED_WITH
    from pytest_fsbench.metrics import Metric

    store = Store(tmp_path / "fsbench.db")
    sid = store.start_session("t-1", {"argv": []}, {"hostname": "h"})
    reference = "benchmarks/test_dd.py::test_dd_write[btrfs-single-1M]"
    rounds = {reference: [500.0, 520.0, 480.0, 510.0, 530.0, 495.0],
              "benchmarks/test_dd.py::test_dd_write[btrfs-single-compress=zstd-1M]":
                  [400.0, 430.0, 390.0, 401.0, 420.0, 405.0]}
    for test, values in rounds.items():
        manifest = {} if test == reference else {PAIRED_WITH: {"reference": reference, "rounds": 6}}
        case_id = test.split("[")[1].rsplit("-", 1)[0]
        row = store.case_row(sid, test, case_id, {"fs": "btrfs", "layout": "single", "options": {}}, "dd",
                             {"bs": "1M"}, "drop", "random", manifest)
        for value in values:
            store.add_run(row, False, "t", 1.0, "drop", [Metric("dd.write", value, "MB/s", Direction.HIGHER)])
        store.finish_case(row, "done", "runs")
    store.finish_session(sid, "complete")
    return store, sid


def test_the_paired_table_is_made_from_the_store_as_the_session_made_it(tmp_path):
    from pytest_fsbench.verdicts.baseline import pair_up
    from pytest_fsbench.verdicts.stats import PAIRED

    store, sid = paired_store(tmp_path)
    data = report.report_data(store, sid)
    [(case, series, cmp)] = data.paired
    assert case == "test_dd_write[btrfs-single-compress=zstd-1M]" and cmp.method == PAIRED
    reference, variant = (store.series(sid, test=t) for t in sorted({s.key.test for s in store.series(sid)}))
    [(_, in_session)] = pair_up(reference, variant, 6, 0.05)
    assert cmp == in_session
    page = report.render(data)
    assert "<h2>Paired: each --paired variant against its reference, by round</h2>" in page
    assert f"{cmp.shift_pct:+.1f}%*" in page and cmp.verdict == "worse"
    # at a glance compares the two paired by round too: the same estimate, interval and word
    [_, _, best, other] = glance_cells(report.at_a_glance(data))
    assert best[0] == "test_dd_write[btrfs-single-1M]"
    assert other[2:5] == [f"{cmp.shift_pct:+.1f}%", f"[{cmp.pct_ci[0]:+.1f}%, {cmp.pct_ci[1]:+.1f}%]",
                          "worse (paired by round)"]
    # a variant whose rounds are not all there pairs nothing
    assert pair_up(reference, variant, 7, 0.05) == []


def test_zeros_stored_as_holes_are_said_so_beside_their_ratio():
    """ZFS with compression on writes no block for zeros: its ratio of about 1.00 counts none of them."""
    def case(fs: str, data: str, ratio: float) -> report.Row:
        row = glance_row(fs, [100.0, 110.0])
        return dataclasses.replace(row, compression=ratio, data=data, spec={"fs": fs})

    rows = [dataclasses.replace(case("zfs", "zeros", 1.0), others_cpu=93.4), case("zfs", "random", 1.0),
            case("btrfs", "zeros", 30.1)]
    data = report.Report(1, {}, [], rows)
    [table] = html.fromstring(f"<div>{report.summary_table(data)}</div>").iter("table")
    assert [[cell.text_content() for cell in row][12] for row in table.iter("tr")] == [
        "compression", "1.00x (zeros stored as holes)", "1.00x", "30.10x"]
    # what other processes used of the CPUs during the runs, beside the tool's own
    assert [[cell.text_content() for cell in row][11] for row in table.iter("tr")] == ["others' CPU %", "93", "", ""]
    assert "ZFS writes no block for a record of zeros (a hole)" in report.summary_table(data)
    assert "holes" not in report.summary_table(report.Report(1, {}, [], [case("btrfs", "zeros", 30.1)]))


def control_sessions(path: Path, figures: dict[int, list[float]], controls: dict[int, list[float]],
                     gated: dict | None = None) -> Store:
    """Sessions 1 and 2 of one dd case that measured --control beside every run; gated: session 2's
    case manifest (the gate's comparisons kept)."""
    from pytest_fsbench.metrics import CONTROL, Metric

    store = Store(path)
    for session in (1, 2):
        sid = store.start_session(f"t-{session}", {"argv": []}, {"hostname": "h"})
        row = store.case_row(sid, "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]", "ext4-single",
                             {"fs": "ext4", "layout": "single", "options": {}}, "dd", {"bs": "1M"}, "drop", "random", {})
        for figure, control in zip(figures[session], controls[session]):
            store.add_run(row, False, "t", 1.0, "drop", [Metric("dd.write", figure, "MB/s", Direction.HIGHER),
                                                          Metric(CONTROL, control, "MB/s", Direction.HIGHER)])
        store.finish_case(row, "done", "runs", gated if session == 2 and gated else None)
        store.finish_session(sid, "complete")
    return store


def test_compare_and_the_report_adjust_by_the_control_beside_the_mb_s(tmp_path, capsys):
    """Sessions that measured --control beside every run are compared as each figure's ratio to its
    run's control, in fsbench compare and the report as in the gate; every view shows the figures'
    medians in MB/s and names the adjustment beside them (issue 32: 729.3 vs 729.7 MB/s were shown
    only as x control ratios)."""
    from pytest_fsbench.verdicts.baseline import compare_pairs
    from pytest_fsbench.verdicts.stats import compare, format_comparison

    figures = {1: [500.0, 520.0, 480.0, 510.0, 530.0, 495.0], 2: [250.0, 260.0, 240.0, 255.0, 265.0, 248.0]}
    controls = {1: [100.0, 104.0, 96.0, 102.0, 106.0, 99.0], 2: [50.0, 52.0, 48.0, 51.0, 53.0, 49.6]}  # a busier machine
    store = control_sessions(tmp_path / "fsbench.db", figures, controls)
    [(case, series, cmp)] = compare_pairs(store, [1], 2, 0.05)
    assert series.unit == "MB/s" and cmp.adjusted_by == "the control"
    assert (cmp.baseline_median, cmp.candidate_median) == (505.0, 252.5)
    expected = compare([f / c for f, c in zip(figures[1], controls[1])],
                       [f / c for f, c in zip(figures[2], controls[2])], Direction.HIGHER)
    assert (cmp.shift_pct, cmp.pct_ci, cmp.p_value, cmp.verdict) == \
        (expected.shift_pct, expected.pct_ci, expected.p_value, "not significant")
    assert compare(figures[1], figures[2], Direction.HIGHER).verdict == "worse"
    line = format_comparison("dd.write", cmp, "MB/s")
    assert line.startswith("dd.write 505 -> 252.5 MB/s (medians -50.0%), adjusted by the control: ")
    assert line.count("CI") == 1
    assert cli.main(["compare", "1", "2", f"--store={store.path}"]) == 0  # adjusted: not significantly worse
    out = capsys.readouterr().out
    [row] = [line for line in unstack(out.splitlines()) if line.startswith("test_dd_write")]
    assert re.search(r"505\s+252\.5\s+MB/s\s+[+-][\d.]+% adjusted by the control\s+\[", row), row
    assert "x control" not in out
    page = report.render(report.report_data(store, 2, [1], "1"))
    assert "adjusted by the control" in page and "x control" not in page


def test_the_report_shows_the_gates_own_comparison_at_its_level(tmp_path):
    """A sequential gate tests each look below alpha (here 0.0275: a 94.5 % interval): the report's
    change table against the gate's baseline shows that comparison, not a second one at 90 %."""
    from pytest_fsbench.verdicts.baseline import compare_pairs, compared_record
    from pytest_fsbench.verdicts.stats import compare, format_comparison

    figures = {1: [500.0, 520.0, 480.0, 510.0, 530.0, 495.0], 2: [450.0, 460.0, 440.0, 455.0, 465.0, 448.0]}
    controls = {1: [100.0] * 6, 2: [100.0] * 6}
    gate = compare(figures[1], figures[2], Direction.HIGHER, 0.0275)
    store = control_sessions(tmp_path / "fsbench.db", figures, controls)
    [(_, series, _)] = compare_pairs(store, [1], 2, 0.05)
    store.close()
    line = f"ext4-single regression: {format_comparison('dd.write', gate, 'MB/s')}"
    manifest = {**compared_record([1], [(series, gate)]), "gate": [{"line": line, "failed": True}]}
    store = control_sessions(tmp_path / "gated.db", figures, controls, {"compared": manifest})
    page = html.fromstring(report.render(report.report_data(store, 2, [1], "1")))
    [table] = [t for t in page.iter("table") if "verdict" in t.text_content()]
    header = [th.text_content() for th in table.iter("th")]
    [cells] = [[td.text_content() for td in tr.iter("td")] for tr in table.iter("tr")
               if tr.find("td") is not None]
    row = dict(zip(header, cells))
    assert "ci94.5" in header and "ci90" not in header
    assert row["ci94.5"] == f"[{gate.pct_ci[0]:+.1f}%, {gate.pct_ci[1]:+.1f}%]"
    assert f"[94.5% CI {row['ci94.5'][1:]}" in line  # the gate's line states the same interval
    other = html.fromstring(report.render(report.report_data(store, 2, [1], "1", alpha=0.1)))
    assert "ci94.5" in other.text_content()  # the gate's comparison whatever --alpha the report is given


def test_long_row_labels_widen_the_figure_and_leave_the_plot_its_width():
    """A study page's labels ("btrfs single compress=no mount=datacow,datasum cache=drop") had left
    the plot less than half its figure: the plot keeps its inches, the labels add theirs."""
    def plot_inches(labels: list[str]) -> tuple[float, float]:
        fig = figures.box_plot("iozone.write (iozone)", [(label, [1.0, 2.0, 3.0]) for label in labels], "MB/s",
                               Direction.HIGHER)
        figures.svg(fig)  # lays it out
        width = fig.get_size_inches()[0]
        return fig.axes[0].get_position().width * width, width

    long, long_figure = plot_inches(["btrfs single compress=no mount=datacow,datasum cache=drop", "ext4 single"])
    short, short_figure = plot_inches(["ext4", "xfs"])
    assert long >= figures.PLOT_WIDTH - 0.1 and long > long_figure / 2 and long_figure > short_figure
    assert short >= figures.PLOT_WIDTH - 0.1


def test_a_plots_labels_leave_out_what_every_case_shares():
    from pytest_fsbench.views.figures import distinct_labels

    assert distinct_labels(["test_iozone[btrfs-single-compress=no-cache=drop-16M-512M]",
                            "test_iozone[btrfs-raid0-compress=zlib-cache=drop-16M-512M]",
                            "test_iozone[ext4-single-cache=drop-16M-512M]"]) == [
        "btrfs single compress=no", "btrfs raid0 compress=zlib", "ext4 single"]
    # one case, or labels that would become alike: the case ids, whole
    assert distinct_labels(["test_dd_write[ext4-single-1M]"]) == ["ext4-single-1M"]
