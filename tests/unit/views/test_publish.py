"""`fsbench publish` (issue 43): its pure parts (a session's figures summed up, tracks, the index's
word on a case, charts and names), and publishing a real SQLite store filled as the plugin fills
it (two hosts of nightly sessions, a 30 % step on one) again and again: what is read, analysed and
written each time."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from lxml import html

from pytest_fsbench import cli
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import SeriesKey, Store
from pytest_fsbench.verdicts import changes
from pytest_fsbench.verdicts.stats import summarize
from pytest_fsbench.views import history, publish, site

WRITE = "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]"
READ = "benchmarks/test_dd.py::test_dd_read[ext4-single-1M]"
PARAMS = {"bs": "1M", "data": "random", "size": "256M"}
GATE_LINE = "ext4-single-1M regression: dd.write -31.0% [-35.0%, -27.0%] p=0.0001; worse than the 5% allowed"


def add_case(store: Store, session: int, test: str, metric: str, level: float, rng, gate=None, runs: int = 5):
    spec = {"fs": "ext4", "id": "ext4-single", "layout": "single", "options": {}}
    row = store.case_row(session, test, "ext4-single", spec, "dd", PARAMS, "drop", "random", {})
    for value in level * np.exp(rng.normal(0.0, 0.03, runs)):
        store.add_run(row, False, "t", 1.0, "drop", [
            Metric(metric, float(value), "MB/s", Direction.HIGHER, PARAMS),
            Metric("work.write_amp", 1.01, "x", Direction.LOWER), Metric("cpu.user", 3.0, "%", Direction.LOWER)])
    manifest = {"applied": {"mount": "/dev/loop1 ext4   rw,relatime"}, **({"gate": gate} if gate else {})}
    store.finish_case(row, "done", "runs", manifest)


def night(store: Store, host: str, number: int, rng, step: float = 1.0, gate=None) -> int:
    session = store.start_session(f"{host}-{number}", {"argv": []},
                                  {"hostname": host, "kernel": "6.1.0-26" if step != 1.0 else "6.1.0-25",
                                   "fsbench_commit": "c0ffee"})
    add_case(store, session, WRITE, "dd.write", 500.0 * step, rng, gate)
    add_case(store, session, READ, "dd.read", 900.0, rng)
    store.finish_session(session, "complete")
    return session


@pytest.fixture
def fleet(tmp_path) -> Path:
    """Two hosts, 8 nights each: on alpha dd write 30 % slower from its 5th night (a new kernel);
    beta steady, its newest session's gate failing dd write."""
    rng = np.random.default_rng(43)
    store = Store(tmp_path / "fleet.db")
    for number in range(1, 9):
        night(store, "alpha", number, rng, 0.7 if number >= 5 else 1.0)
        night(store, "beta", number, rng, gate=[{"line": GATE_LINE, "failed": True}] if number == 8 else None)
    store.close()
    return tmp_path / "fleet.db"


def publish_cli(capsys, site_dir: Path, db: Path, *extra: str) -> str:
    status = cli.main(["publish", str(site_dir), f"--store={db}", *extra])
    out, err = capsys.readouterr()
    assert status == 0, err
    return " ".join(out.split())  # the line, as the terminal's width wrapped it, whole again


def pages_of(site_dir: Path) -> dict[str, float]:
    return {str(p.relative_to(site_dir)): p.stat().st_mtime_ns for p in site_dir.rglob("*.html")}


# --- the pure parts ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 13))
def test_a_sessions_figure_is_the_summary_every_view_gives(n):
    values = list(np.random.default_rng(n).normal(100, 10, n))
    runs, median, low, high = history.figure(values)
    found = summarize(values)
    assert (runs, median) == (found.n, found.median)
    if n > 1:
        assert (low, high) == found.median_ci


def test_names_of_files_keep_only_safe_characters_and_stay_apart():
    assert site.slug("test_dd_write[ext4-single-1M]") == "test_dd_write-ext4-single-1M"
    assert site.slug("../../etc/passwd") == "etc-passwd"
    long_a, long_b = "x" * 200 + "a", "x" * 200 + "b"
    assert len(site.slug(long_a)) <= 96 and site.slug(long_a) != site.slug(long_b)
    case = history.Case(WRITE, "dd", json.dumps(PARAMS, separators=(",", ":"), sort_keys=True))
    assert site.case_path(case) == "cases/test_dd_write-ext4-single-1M--bs=1M-data=random-size=256M.html"


def test_labels_of_close_change_points_take_another_row_or_none():
    assert site.label_rows([100.0, 120.0, 300.0]) == [0, 1, 0]
    assert site.label_rows([100.0, 110.0, 120.0]) == [0, 1, None]


def track_of(medians: list[float], metric: str = "dd.write", host: str = "h") -> history.Track:
    facts = history.Facts({i: (host, f"t{i}", f"2026-01-{i + 1:02d}T01:00:00+00:00", "c") for i in range(len(medians))},
                          [("6.1", "none")])
    n = len(medians)
    track = history.Track(host, SeriesKey(WRITE, "dd", "{}", metric, "{}"), "MB/s", Direction.HIGHER, facts,
                          list(range(n)), [5] * n, medians, [m * 0.97 for m in medians], [m * 1.03 for m in medians],
                          [0] * n)
    track.detect(history.detect(medians, metric, changes.MAX_PVALUE))
    return track


def test_a_chart_draws_each_session_and_marks_each_change_point_as_fsbench_changes_finds_it():
    medians = [500.0, 505.0, 498.0, 502.0, 350.0, 352.0, 349.0, 351.0]
    track = track_of(medians)
    [found] = changes.change_points(track.history())
    drawn = html.fromstring(site.chart(track))
    [mark] = drawn.find_class("change")
    assert mark.get("data-session") == "4" and mark.get("data-change") == f"{found.change_pct:+.1f}%"
    assert "worse" in mark.get("class").split() and float(mark.get("data-p")) < changes.MAX_PVALUE
    [line] = drawn.find_class("medians")
    assert len(line.get("points").split()) == len(medians)
    assert "differs: kernel" not in mark.text_content() and "the same" in mark.text_content()


def test_charts_of_one_page_share_their_sessions_along_x():
    full, late = track_of([500.0] * 8), track_of([1.0] * 8, "work.write_amp")
    late.sessions = late.sessions[4:]
    late.medians, late.lows, late.highs = late.medians[4:], late.lows[4:], late.highs[4:]
    late.runs, late.contexts = late.runs[4:], late.contexts[4:]
    axis = site.sessions_of([full, late])
    def first_x(svg: str) -> float:
        return float(html.fromstring(svg).find_class("medians")[0].get("points").split()[0].split(",")[0])

    assert first_x(site.chart(late, axis)) == 4 and first_x(site.chart(late)) == 0


def test_the_index_says_what_is_new():
    """Red: the gate's regression in the newest session, or a headline figure's level of the last
    RECENT sessions worse than before; an older change, or one of a work count, is said, not coloured."""
    step = track_of([500.0] * 6 + [350.0] * 3)
    assert history.verdict([step], 8, []).word == "worse"
    old = track_of([500.0] * 3 + [350.0] * (history.RECENT + 3))
    verdict = history.verdict([old], 12, [])
    assert verdict.change is not None and verdict.age >= history.RECENT and verdict.word == ""
    flat = track_of([500.0] * 9)
    assert history.verdict([flat], 8, [["regression", True, GATE_LINE]]).word == "regression"
    assert history.verdict([flat], 8, [["inconclusive", False, "x"]]).word == "inconclusive"
    work = track_of([1.0] * 6 + [1.5] * 3, "work.write_amp")
    said = history.verdict([flat, work], 8, [])
    assert said.change is not None and said.change.history.key.metric == "work.write_amp" and said.word == ""


# --- publishing a store -------------------------------------------------------------------------


def test_a_publish_shows_the_change_point_the_gate_and_every_session(fleet, tmp_path, capsys):
    site_dir = tmp_path / "site"
    out = publish_cli(capsys, site_dir, fleet)
    # per host: dd write and read, and each one's work per byte moved
    assert "16 sessions (16 read from the store), 8 series, 1 change point (8 series analysed)" in out
    tree = html.fromstring((site_dir / "index.html").read_text())
    assert [th.text_content() for th in tree.xpath("//thead/tr/th")] == ["case", "alpha", "beta"]
    cells = {(tr.get("data-case"), td.get("data-host")): td for tr in tree.xpath("//tbody/tr") for td in tr.xpath("td")}
    store = Store(fleet, create=False)
    [found] = changes.detect(store, "alpha")
    alpha = cells[("test_dd_write[ext4-single-1M]", "alpha")]
    assert "worse" in alpha.get("class").split() and f"worse {found.change_pct:+.1f}%" in alpha.text_content()
    beta = cells[("test_dd_write[ext4-single-1M]", "beta")]
    assert "regression" in beta.get("class").split() and "regression" in beta.text_content()
    case = history.Case(WRITE, "dd", '{"bs":"1M","data":"random","size":"256M"}')
    page = html.fromstring((site_dir / site.host_path(case, "alpha")).read_text())
    marks = [m for m in page.find_class("change") if m.tag == "line"]
    assert {(m.get("data-session"), m.get("data-p")) for m in marks} == {
        (str(found.session.session_id), f"{found.pvalue:.2g}")}
    assert "differs: kernel 6.1.0-25 -> 6.1.0-26" in marks[0].text_content()
    rows = page.xpath("//tbody/tr")
    assert len(rows) == 8 and rows[0].xpath("td")[0].text_content() == str(store.sessions(host="alpha")[-1].id)
    listed = html.fromstring((site_dir / "changes.html").read_text()).xpath("//tbody/tr")
    assert [[td.text_content() for td in tr.xpath("td")][2:6] for tr in listed] == [
        ["beta", "test_dd_write[ext4-single-1M]", "gate", "regression"],
        ["alpha", "test_dd_write[ext4-single-1M]", "dd.write", "worse"]]
    assert all(p.stat().st_size < 2_000_000 for p in site_dir.rglob("*.html"))


def test_a_publish_again_reads_analyses_and_writes_only_what_changed(fleet, tmp_path, capsys):
    site_dir = tmp_path / "site"
    publish_cli(capsys, site_dir, fleet)
    before = pages_of(site_dir)
    out = publish_cli(capsys, site_dir, fleet)
    assert "(0 read from the store)" in out and "(0 series analysed)" in out
    assert f"0 of {len(before)} pages written" in out and pages_of(site_dir) == before
    store = Store(fleet)
    night(store, "beta", 9, np.random.default_rng(9))
    store.close()
    out = publish_cli(capsys, site_dir, fleet)
    assert "(1 read from the store)" in out and "(4 series analysed)" in out
    after = pages_of(site_dir)
    changed = {name for name in after if after[name] != before.get(name)}
    month = Store(fleet, create=False).sessions()[-1].started[:7]
    cases = ("test_dd_read-ext4-single-1M--bs=1M-data=random-size=256M",
             "test_dd_write-ext4-single-1M--bs=1M-data=random-size=256M")
    # the index (beta's newest medians), each case's page (beta's charts), beta's pages and this month's
    # table; not alpha's pages, nor the list of change points (none came)
    assert changed == {"index.html", *(f"cases/{c}.html" for c in cases), *(f"cases/{c}/beta.html" for c in cases),
                       *(f"cases/{c}/beta--{month}.html" for c in cases)}


def test_a_resumed_session_is_read_again(fleet, tmp_path, capsys):
    site_dir = tmp_path / "site"
    publish_cli(capsys, site_dir, fleet)
    store = Store(fleet)
    last = store.sessions(host="alpha")[-1].id
    assert store.reopen_session(last, store.session_export(last)["session"], {"pid": os.getpid()}) is None
    store.finish_session(last, "complete")
    # it ended later than it had (to the second, as the store keeps the time)
    store.db.execute("UPDATE sessions SET finished = '2099-01-01T00:00:00+00:00' WHERE id = ?", (last,))
    store.close()
    assert "(1 read from the store)" in publish_cli(capsys, site_dir, fleet)


def test_reports_are_written_once_for_each_hosts_newest_session_and_linked(fleet, tmp_path, capsys):
    site_dir = tmp_path / "site"
    out = publish_cli(capsys, site_dir, fleet, "--reports=newest")
    assert "2 reports written" in out
    store = Store(fleet, create=False)
    newest = {host: store.sessions(host=host)[-1].id for host in ("alpha", "beta")}
    assert sorted(p.name for p in (site_dir / "reports").iterdir()) == sorted(
        f"session-{i}.html" for i in newest.values())
    case = history.Case(READ, "dd", '{"bs":"1M","data":"random","size":"256M"}')
    page = html.fromstring((site_dir / site.host_path(case, "alpha")).read_text())
    assert page.xpath("//tbody/tr[1]/td[1]/a/@href") == [f"../../reports/session-{newest['alpha']}.html"]
    assert page.xpath("//tbody/tr[2]/td[1]/a") == []  # no report of an older session: its id alone
    assert "2 reports written" not in publish_cli(capsys, site_dir, fleet, "--reports=newest")


def test_a_directory_of_other_files_is_refused_and_left_as_it_was(fleet, tmp_path, capsys):
    other = tmp_path / "home"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert cli.main(["publish", str(other), f"--store={fleet}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds files of something else" in err and str(other) in err
    assert err.startswith(f"fsbench publish: {other}: ")  # the command named once
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    assert cli.main(["publish", str(tmp_path / "file"), f"--store={fleet}"]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert cli.main(["publish", str(tmp_path / "new"), f"--store={fleet}", "--max-pvalue=2"]) == 2
    assert "--max-pvalue 2" in capsys.readouterr().err and not (tmp_path / "new").exists()


def test_a_page_someone_replaced_is_not_overwritten(fleet, tmp_path, capsys):
    site_dir = tmp_path / "site"
    publish_cli(capsys, site_dir, fleet)
    (site_dir / "index.html").write_text("my own page")
    store = Store(fleet)
    night(store, "beta", 9, np.random.default_rng(9))
    store.close()
    assert cli.main(["publish", str(site_dir), f"--store={fleet}"]) == 2
    err = capsys.readouterr().err
    assert "index.html exists and is no published site fsbench wrote" in err
    assert (site_dir / "index.html").read_text() == "my own page"


def test_another_stores_site_is_rebuilt_and_its_stale_pages_removed(fleet, tmp_path, capsys):
    site_dir = tmp_path / "site"
    publish_cli(capsys, site_dir, fleet)
    other = tmp_path / "other.db"
    store = Store(other)
    rng = np.random.default_rng(1)
    for number in range(1, 6):
        night(store, "gamma", number, rng)
    store.close()
    out = publish_cli(capsys, site_dir, other)
    assert "(5 read from the store)" in out
    assert not [p for p in site_dir.rglob("*.html") if "alpha" in p.name or "beta" in p.name]
    assert re.search(r"[1-9]\d* removed", out)


@pytest.mark.skipif(os.cpu_count() == 1, reason="one CPU: nothing runs in parallel")
def test_many_tracks_are_analysed_and_built_in_parallel_the_same(tmp_path):
    """PARALLEL_FROM tracks and more go to forked processes: the same change points and pages."""
    medians = [list(500 * np.exp(np.random.default_rng(i).normal(0, 0.05, 40))) for i in range(10)]
    items = [(m, "dd.write", changes.MAX_PVALUE) for m in medians * (publish.PARALLEL_FROM // 10 + 1)]
    assert publish.in_parallel(publish._detect, items, 2) == [publish._detect(item) for item in items]


def test_a_first_publish_cut_short_is_finished_by_the_next(fleet, tmp_path, capsys, monkeypatch):
    """Issue 44's sweep: SIGTERM during a first publish left site/reports/ and no record, and the next
    publish refused the directory as holding files of something else. A mock: the interrupt is raised
    as the first report is written (a real signal's moment is not reproducible)."""
    site_dir = tmp_path / "site"

    def cut_short(*args, **kwargs):
        (site_dir / "reports").mkdir(parents=True, exist_ok=True)
        raise KeyboardInterrupt("SIGTERM")

    monkeypatch.setattr(publish, "write_reports", cut_short)
    with pytest.raises(KeyboardInterrupt):
        cli.main(["publish", str(site_dir), f"--store={fleet}", "--reports=newest"])
    monkeypatch.undo()
    assert "2 reports written" in publish_cli(capsys, site_dir, fleet, "--reports=newest")
    assert (site_dir / "index.html").is_file()
