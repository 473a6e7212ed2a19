"""pytest_fsbench.pts (profiles, options, the workload, result files read and written), without
PTS itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from lxml import etree

from pytest_fsbench.errors import ParseError, UsageError
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.pts import launcher, options, profiles, results
from pytest_fsbench.pts.export import composite_xml
from pytest_fsbench.pts.workload import RESULT_MARK, PtsWorkload, install_failure
from pytest_fsbench.measure.run import Unsupported
from pytest_fsbench.store.results import Store
from pytest_fsbench.targets.target import NotOnTarget
from pts_template import schema

DATA = Path(__file__).resolve().parents[2] / "data" / "pts"
DD = profiles.profiles()["fsbench-dd"]


def test_options_parse_and_unknown_ones_are_refused():
    assert profiles.parse_options("test=read; cache=drop;") == (("test", "read"), ("cache", "drop"))
    with pytest.raises(profiles.PtsError, match="IDENTIFIER=VALUE"):
        profiles.parse_options("test")
    with pytest.raises(profiles.PtsError, match="has no option 'speed'"):
        DD.choices((("speed", "fast"),))
    with pytest.raises(profiles.PtsError, match="choose one of write, read"):
        DD.choices((("test", "append"),))


def test_each_profile_declares_its_quick_value_of_every_option():
    """No table to keep: each option's DefaultEntry is its quick value (minutes, small files)."""
    found = profiles.profiles()
    assert set(found) == {"fsbench-dd", "fsbench-iozone", "fsbench-filebench", "fsbench-bonnie",
                          "fsbench-kernel-build"}
    for profile in found.values():
        for option in etree.parse(str(profile.definition)).iter("Option"):
            assert option.findtext("DefaultEntry"), f"{profile.name} {option.findtext('Identifier')}: no DefaultEntry"
        assert [key for key, _ in profile.quick_options()] == [o.identifier for o in profile.options]
        profile.choices(profile.quick_options())
    assert dict(DD.quick_options()) == {"test": "write", "block-size": "1048576", "file-size": "256",
                                        "data": "random", "cache": "direct"}
    assert dict(found["fsbench-iozone"].quick_options()) == {"record-size": "1m", "file-size": "512",
                                                             "test": "-i0 #WRITE", "cache": "-I"}


def test_default_entry_is_read_as_pts_reads_it():
    values = ["a", "b", "c"]
    assert [profiles.default_entry(text, values) for text in (None, "", "0", "1", "3")] == ["a", "a", "a", "a", "c"]
    for bad in ("4", "b", "-1"):
        with pytest.raises(profiles.PtsError):
            profiles.default_entry(bad, values)


def test_a_new_profile_is_found_and_read_from_its_own_directory(tmp_path):
    new = tmp_path / "fsbench-new-2.1.0"
    new.mkdir()
    text = DD.definition.read_text().replace("<DefaultEntry>3</DefaultEntry>", "<DefaultEntry>5</DefaultEntry>")
    (new / "test-definition.xml").write_text(text)
    [profile] = profiles.profiles(tmp_path).values()
    assert (profile.name, profile.version, profile.test) == ("fsbench-new", "2.1.0", "local/fsbench-new-2.1.0")
    assert dict(profile.quick_options())["block-size"] == "16777216"
    base = tmp_path / "fsbench-base-1.0.0"
    base.mkdir()
    (base / "test-definition.xml").write_text(
        (profiles.PROFILES_DIR / "fsbench-base-1.0.0" / "test-definition.xml").read_text())
    assert list(profiles.profiles(tmp_path)) == ["fsbench-new"], "a base profile runs nothing"
    assert list(profiles.base_profiles(tmp_path)) == ["fsbench-base"]


def test_pts_settings_put_the_options_given_in_place_of_the_quick_ones(monkeypatch):
    monkeypatch.delenv(launcher.SYSTEM_TOOLS_ENV, raising=False)
    chosen = options.pts_settings(None, (("test", "read"),), None, None, False)
    assert (chosen.profile, chosen.version) == ("fsbench-dd", "1.0.0")
    assert chosen.options == (("test", "read"), ("block-size", "1048576"), ("file-size", "256"),
                              ("data", "random"), ("cache", "direct"))
    assert chosen.choices == (("test", 1), ("block-size", 2), ("file-size", 0), ("data", 1), ("cache", 1))
    assert not chosen.system_tools
    with pytest.raises(UsageError, match="--pts-options: fsbench-dd-1.0.0 option cache='cold': choose one of"):
        options.pts_settings(None, (("cache", "cold"),), None, None, False)
    monkeypatch.setenv(launcher.SYSTEM_TOOLS_ENV, "1")
    assert options.pts_settings(options.profile("fsbench-bonnie"), (), "r-1", None, False).system_tools
    with pytest.raises(ValueError, match="choose one of fsbench-bonnie, fsbench-dd, "):
        options.profile("fsbench-fio")
    with pytest.raises(ValueError, match="IDENTIFIER=VALUE"):
        options.run_options("test")
    with pytest.raises(ValueError, match="PTS result name 'A b'"):
        options.result_name("A b")


def dd_workload(**kw) -> PtsWorkload:
    options = (("test", "read"), ("block-size", "1048576"))
    return PtsWorkload(pts="/opt/pts/phoronix-test-suite", profile="fsbench-dd", version="1.0.0",
                           options=options, choices=DD.choices(options), identifier="btrfs-raid1",
                           description="d", user=Path("/var/lib/pts"), **kw)


def test_each_run_is_one_pts_run_of_the_menu_positions_under_the_work_directory(tmp_path):
    workload = dd_workload()
    env = workload.env(Path("/mnt/t/fsbench"), "fsbench-x")
    assert env["PRESET_OPTIONS"] == "fsbench-dd.test=1;fsbench-dd.block-size=2"
    assert env["PTS_TEST_INSTALL_ROOT_PATH"] == "/mnt/t/fsbench/pts/"
    assert env["TEST_RESULTS_IDENTIFIER"] == "btrfs-raid1" and env["FORCE_TIMES_TO_RUN"] == "1"
    assert env["PTS_IGNORE_MODULES"] == "1", "no result-viewer server left behind by a killed PTS"
    assert launcher.SYSTEM_TOOLS_ENV not in env
    assert workload.name == "pts.fsbench-dd" and workload.params()["profile"] == "local/fsbench-dd-1.0.0"
    argv = workload.argv(Path("/mnt/t/fsbench"), tmp_path / "run-Ab_9")
    assert argv[-2:] == ["internal-run", "local/fsbench-dd-1.0.0"]
    assert "TEST_RESULTS_NAME=fsbench-run-ab-9" in argv  # a result of the run's own, in PTS's rules
    assert "/var/lib/pts/test-results/fsbench-run-ab-9/composite.xml" in argv
    # underscores in a row (tempfile's names have them) would be dashes in a row, which PTS
    # collapses: the result would be saved under a name fsbench does not look for
    again = workload.argv(Path("/mnt/t/fsbench"), tmp_path / "run-p__dl_oe_")
    assert "TEST_RESULTS_NAME=fsbench-run-p-dl-oe" in again
    assert workload.install_argv(Path("/mnt/t/fsbench"))[-2] == "batch-install"


def test_a_profile_is_not_installed_in_a_guest():
    @dataclass(frozen=True)
    class Spec:
        in_guest: bool = True

    @dataclass(frozen=True)
    class GuestTarget:
        spec: Spec = Spec()

    with pytest.raises(Unsupported, match="pts.fsbench-dd is installed and run on the host's kernel only"):
        dd_workload().installed(GuestTarget(), execute=None)


def captured_run() -> str:
    return (DATA / "dd-run-output.txt").read_text()


def test_a_run_is_parsed_from_the_result_file_pts_printed():
    workload = dd_workload(fs="ext4", stat_type="ext2/ext3")
    workload = PtsWorkload(**{**workload.__dict__, "identifier": "ext4-single", "options": (("test", "write"),)})
    [metric] = workload.parse(captured_run())
    assert metric.name == "pts.dd" and metric.unit == "MB/s" and metric.value > 0
    assert metric.params["result"].startswith("Test: Sequential Write")
    [record] = workload.manifest_entries(captured_run())["pts_results"]
    assert record["value"] == pytest.approx(metric.value) and record["identifier"] == "local/fsbench-dd-1.0.0"


def test_a_run_without_a_result_or_on_another_filesystem_yields_no_number():
    workload = PtsWorkload(**{**dd_workload(fs="btrfs", stat_type="btrfs").__dict__, "identifier": "ext4-single"})
    with pytest.raises(NotOnTarget, match="PTS reported File-System 'ext4' for ext4-single, but the target is btrfs"):
        workload.parse(captured_run())
    with pytest.raises(ParseError, match="PTS printed no result file"):
        workload.parse(captured_run().partition(RESULT_MARK)[0])
    other = PtsWorkload(**{**dd_workload(fs="ext4", stat_type="ext2/ext3").__dict__, "identifier": "xfs-single"})
    with pytest.raises(ParseError, match="saved no result for xfs-single"):
        other.parse(captured_run())


def test_result_names_are_what_pts_keeps():
    assert launcher.check_result_name("fsbench-20261122-0712") == "fsbench-20261122-0712"
    for bad in ("Fsbench", "a", "with space", "x/y", "run-p--dl", "trailing-", "-leading"):
        with pytest.raises(profiles.PtsError):
            launcher.check_result_name(bad)


def test_user_path_follows_pts_rules(tmp_path):
    assert launcher.user_path({"HOME": "/home/u"}, uid=1000) == Path("/home/u/.phoronix-test-suite")
    assert launcher.user_path({}, uid=0) == Path("/var/lib/phoronix-test-suite")
    assert launcher.user_path({"PTS_USER_PATH_OVERRIDE": str(tmp_path)}, uid=0) == tmp_path


def test_reads_the_result_file_pts_wrote():
    composite = DATA / "dd-ext4-btrfs-composite.xml"
    ext4 = results.read_results(composite, "ext4-single")
    btrfs = results.read_results(composite, "btrfs-single")
    assert len(ext4) == len(btrfs) == 1
    r = ext4[0]
    assert r.identifier == "local/fsbench-dd-1.0.0" and r.scale == "MB/s" and r.proportion == "HIB"
    assert r.description.startswith("Test: Sequential Read - Block Size: 1MB")
    assert len(r.samples) == 2 and min(r.samples) <= r.value <= max(r.samples)
    assert len(r.run_seconds) == 2
    metrics = results.to_metrics("fsbench-dd", ext4, 1)
    assert metrics == [Metric("pts.dd", r.samples[1], "MB/s", Direction.HIGHER, {"result": r.description})]
    assert results.to_metrics("fsbench-dd", ext4, 2) == []


def test_install_definitions_copies_and_then_leaves_them(tmp_path):
    changed = profiles.install_definitions(tmp_path)
    assert str(tmp_path / "test-profiles/local/fsbench-dd-1.0.0") in changed
    assert str(tmp_path / "test-suites/local/fsbench-quick-1.0.0") in changed
    assert str(tmp_path / "test-profiles/local/fsbench-base-1.0.0") in changed, "the profiles extend it"
    assert profiles.install_definitions(tmp_path) == []
    (tmp_path / "test-profiles/local/fsbench-dd-1.0.0/install.sh").write_text("changed")
    assert profiles.install_definitions(tmp_path) == [str(tmp_path / "test-profiles/local/fsbench-dd-1.0.0")]


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
    assert "File-System: btrfs (single; compress=zstd)" in btrfs.findtext("Software")
    assert "Memory: 8GB" in btrfs.findtext("Hardware") and "fsbench-manifest" in btrfs.findtext("JSON")
    results = list(doc.iter("Result"))
    assert len(results) == 1, "side metrics (cpu.*) stay out"
    result = results[0]
    assert result.findtext("Scale") == "MB/s" and result.findtext("Proportion") == "HIB"
    entries = {e.findtext("Identifier"): e for e in result.iter("Entry")}
    assert entries["ext4-single"].findtext("Value") == "410"
    assert entries["btrfs-single"].findtext("RawString") == "300:310:290"


def test_system_tools_copies_install_offline_without_downloads(tmp_path):
    profiles.install_definitions(tmp_path, system_tools=True)
    local = tmp_path / "test-profiles" / "local"
    assert not list(local.glob("*/downloads.xml")) and (local / "fsbench-dd-1.0.0" / "install.sh").exists()
    assert profiles.install_definitions(tmp_path, system_tools=True) == []
    # switching back restores the pinned downloads for a connected machine
    assert str(local / "fsbench-iozone-1.0.0") in profiles.install_definitions(tmp_path)
    assert (local / "fsbench-iozone-1.0.0" / "downloads.xml").exists()


def test_an_install_pts_refused_offline_is_a_failure_with_its_reason():
    output = (DATA / "install-offline" / "output.txt").read_text()
    reason = install_failure(DATA / "install-offline", output)
    assert reason == ("PTS did not install install-offline (INSTALL_FAILED): Internet support is needed to acquire "
                      "files and it's disabled or not available.; Downloading of needed test files failed.")


def test_a_failed_install_script_is_a_failure_with_the_log_tail():
    reason = install_failure(DATA / "install-failed", (DATA / "install-failed" / "output.txt").read_text())
    assert "(INSTALL_FAILED): The installer exited with a non-zero exit status." in reason
    assert "install-failed.log ends:\nfsbench-filebench: FSBENCH_PTS_SYSTEM_TOOLS=1, but there is no filebench" in reason


def test_no_install_record_is_a_failure_with_pts_output(tmp_path):
    reason = install_failure(tmp_path, "line 1\nPTS said this last\n")
    assert reason.startswith(f"PTS wrote no installation record {tmp_path / 'pts-install.json'}")
    assert reason.endswith("PTS said this last")
    (tmp_path / "pts-install.json").write_text('{"test_installation": {"status": "INSTALLED"}}')
    assert install_failure(tmp_path, "") is None


def test_the_software_line_names_each_targets_filesystem():
    composite = DATA / "iozone-ext4-btrfs-composite.xml"
    assert results.software_filesystem(composite, "btrfs-single") == "btrfs"
    assert results.software_filesystem(composite, "ext4-single") == "ext4"
    assert results.software_filesystem(composite, "xfs-single") is None
    assert results.names_filesystem("btrfs", "btrfs", "btrfs")
    assert not results.names_filesystem("ext4", "btrfs", "btrfs")  # PTS measured its own directory's disk
    assert results.names_filesystem("ext4", "ext3", "ext2/ext3")  # stat names every ext* alike
    assert results.names_filesystem("fuseblk", "zfs", "fuseblk")
    assert not results.names_filesystem(None, "xfs", "xfs")


def test_a_pts_run_case_is_exported_as_pts_described_it_in_its_own_unit(tmp_path):
    composite = DATA / "iozone-ext4-btrfs-composite.xml"
    store = Store(tmp_path / "fsbench.db")
    sid = store.start_session("t-2", {"argv": []}, {})
    for system in ("ext4-single", "btrfs-single"):
        [result] = results.read_results(composite, system)
        fs = system.split("-")[0]
        row = store.case_row(sid, f"benchmarks/test_pts.py::test_pts[{system}]", system,
                             {"fs": fs, "layout": "single", "options": {}}, "pts.fsbench-iozone",
                             {"profile": result.identifier}, "profile", "random", {"pts_results": [result.as_record()]})
        for i in range(len(result.samples)):
            store.add_run(row, False, "t", 1.0, "profile", results.to_metrics("fsbench-iozone", [result], i))
    stored = [s for s in store.series(sid) if s.case_id == "btrfs-single"][0]
    assert stored.unit == "MB/s" and stored.values[0] == pytest.approx(224.712890625 * 1.048576)
    doc = etree.fromstring(composite_xml(store, sid, suffix="s2"))
    [exported] = doc.iter("Result")
    assert exported.findtext("Identifier") == "local/fsbench-iozone-1.0.0" and exported.findtext("Scale") == "MiB/s"
    assert exported.findtext("Description") == "Record Size: 1MB - File Size: 512MB - Test: Write - Cache: Direct I/O"
    entries = {e.findtext("Identifier"): e.findtext("RawString") for e in exported.iter("Entry")}
    assert entries == {"ext4-single (s2)": "316.821:418.598", "btrfs-single (s2)": "224.713:317.904"}
    assert [s.findtext("Identifier") for s in doc.iter("System")] == ["ext4-single (s2)", "btrfs-single (s2)"]


def test_a_result_of_one_run_is_its_value():
    [result] = results.read_results(DATA / "dd-one-run-composite.xml", "ext4-single")
    assert result.samples == (result.value,) and len(result.run_seconds) == 1
