"""pytest_fsbench.pts and the PTS result-file export, without PTS itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from pytest_fsbench import pts
from pytest_fsbench.export.pts import composite_xml
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store import Store
from pts_template import schema

DATA = Path(__file__).resolve().parents[1] / "data" / "pts"
DD = pts.available_profiles()["fsbench-dd"] / "test-definition.xml"


def test_options_parse_and_unknown_ones_are_refused():
    assert pts.parse_options("test=read; cache=drop;") == (("test", "read"), ("cache", "drop"))
    with pytest.raises(pts.PtsError, match="IDENTIFIER=VALUE"):
        pts.parse_options("test")
    with pytest.raises(pts.PtsError, match="has no option 'speed'"):
        pts.option_choices(DD, (("speed", "fast"),))
    with pytest.raises(pts.PtsError, match="choose one of write, read"):
        pts.option_choices(DD, (("test", "append"),))


def test_quick_defaults_are_menu_values_of_every_profile():
    profiles = pts.available_profiles()
    assert set(pts.QUICK_OPTIONS) == set(profiles)
    for name, options in pts.QUICK_OPTIONS.items():
        definition = profiles[name] / "test-definition.xml"
        pts.option_choices(definition, tuple(options.items()))
        assert set(options) == set(pts.profile_options(definition)), f"{name}: every option preset"


def test_run_environment_selects_menu_positions():
    options = (("test", "read"), ("block-size", "1048576"))
    run = pts.PtsRun(pts="/opt/pts/phoronix-test-suite", profile="fsbench-dd", version="1.0.0", options=options,
                     choices=pts.option_choices(DD, options), result_name="fsbench-x", identifier="btrfs-raid1",
                     description="d", install_root=Path("/mnt/t/pts"), times=4)
    env = run.env()
    assert env["PRESET_OPTIONS"] == "fsbench-dd.test=1;fsbench-dd.block-size=2"
    assert env["PTS_TEST_INSTALL_ROOT_PATH"] == "/mnt/t/pts/"
    assert env["TEST_RESULTS_IDENTIFIER"] == "btrfs-raid1" and env["FORCE_TIMES_TO_RUN"] == "4"
    assert pts.SYSTEM_TOOLS_ENV not in env
    assert run.run_argv()[-2:] == ["internal-run", "local/fsbench-dd-1.0.0"]
    assert run.install_argv()[0] == "env" and run.install_argv()[-2] == "batch-install"


def test_result_names_are_what_pts_keeps():
    assert pts.check_result_name("fsbench-20261122-0712") == "fsbench-20261122-0712"
    for bad in ("Fsbench", "a", "with space", "x/y"):
        with pytest.raises(pts.PtsError):
            pts.check_result_name(bad)


def test_user_path_follows_pts_rules(tmp_path):
    assert pts.user_path({"HOME": "/home/u"}, uid=1000) == Path("/home/u/.phoronix-test-suite")
    assert pts.user_path({}, uid=0) == Path("/var/lib/phoronix-test-suite")
    assert pts.user_path({"PTS_USER_PATH_OVERRIDE": str(tmp_path)}, uid=0) == tmp_path


def test_reads_the_result_file_pts_wrote():
    composite = DATA / "dd-ext4-btrfs-composite.xml"
    ext4 = pts.read_results(composite, "ext4-single")
    btrfs = pts.read_results(composite, "btrfs-single")
    assert len(ext4) == len(btrfs) == 1
    r = ext4[0]
    assert r.identifier == "local/fsbench-dd-1.0.0" and r.scale == "MB/s" and r.proportion == "HIB"
    assert r.description.startswith("Test: Sequential Read - Block Size: 1MB")
    assert len(r.samples) == 2 and min(r.samples) <= r.value <= max(r.samples)
    assert len(r.run_seconds) == 2
    metrics = pts.to_metrics("fsbench-dd", ext4, 1)
    assert metrics == [Metric("pts.dd", r.samples[1], "MB/s", Direction.HIGHER, {"result": r.description})]
    assert pts.to_metrics("fsbench-dd", ext4, 2) == []


def test_install_definitions_copies_and_then_leaves_them(tmp_path):
    changed = pts.install_definitions(tmp_path)
    assert str(tmp_path / "test-profiles/local/fsbench-dd-1.0.0") in changed
    assert str(tmp_path / "test-suites/local/fsbench-quick-1.0.0") in changed
    assert pts.install_definitions(tmp_path) == []
    (tmp_path / "test-profiles/local/fsbench-dd-1.0.0/install.sh").write_text("changed")
    assert pts.install_definitions(tmp_path) == [str(tmp_path / "test-profiles/local/fsbench-dd-1.0.0")]


def _session(tmp_path) -> tuple[Store, int]:
    store = Store(tmp_path / "fsbench.db")
    sid = store.start_session("t-1", {"argv": ["--fs=ext4,btrfs"]}, {"kernel": "6.1"})
    host = {"cpu": "Test CPU", "cpus": 2, "ram_bytes": 8 * 2**30, "kernel": "6.1"}
    for fs, values in (("ext4", (410.0, 400.0, 420.0)), ("btrfs", (300.0, 310.0, 290.0))):
        spec = {"fs": fs, "layout": "single", "options": {"compress": "zstd"} if fs == "btrfs" else {}, "id": f"{fs}-single"}
        manifest = {"host": host, "devices": [{"path": "/dev/loop0", "size_bytes": 2 * 10**9, "backing_file": "x"}]}
        row = store.case_row(sid, "benchmarks/test_dd.py::test_dd_write[%s-single]" % fs, f"{fs}-single", spec,
                             "dd", {"bs": "1M"}, "drop", "random", manifest)
        for v in values:
            store.add_run(row, False, "2026-11-22T00:00:00+00:00", 1.0, "drop",
                          [Metric("dd.write", v, "MB/s", Direction.HIGHER, {"bs": "1M"}),
                           Metric("cpu.busy", 50.0, "%", Direction.LOWER)])
    return store, sid


def test_export_is_a_valid_pts_result_file_with_medians_and_samples(tmp_path):
    store, sid = _session(tmp_path)
    xml = composite_xml(store, sid)
    doc = etree.fromstring(xml)
    checker = schema("result-file.xsd")
    assert checker.validate(etree.ElementTree(doc)), checker.error_log
    assert [s.findtext("Identifier") for s in doc.iter("System")] == ["ext4-single", "btrfs-single"]
    btrfs = [s for s in doc.iter("System") if s.findtext("Identifier") == "btrfs-single"][0]
    assert "File-System: btrfs single (compress=zstd)" in btrfs.findtext("Software")
    assert "Memory: 8GB" in btrfs.findtext("Hardware") and "fsbench-manifest" in btrfs.findtext("JSON")
    results = list(doc.iter("Result"))
    assert len(results) == 1, "side metrics (cpu.*) stay out"
    result = results[0]
    assert result.findtext("Scale") == "MB/s" and result.findtext("Proportion") == "HIB"
    entries = {e.findtext("Identifier"): e for e in result.iter("Entry")}
    assert entries["ext4-single"].findtext("Value") == "410"
    assert entries["btrfs-single"].findtext("RawString") == "300:310:290"
