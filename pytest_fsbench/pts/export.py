"""A fsbench session written as one PTS result file (composite.xml), so PTS can show, merge,
convert and upload fsbench's results (`fsbench export --format pts`, and the pytest face's file
after each PTS case). A session becomes:
- one System per case identifier (e.g. "btrfs-raid10-zstd"): hardware and software strings PTS
  shows, fsbench's manifest (filesystem, layout, options, devices, tool versions) in its JSON;
- one Result per test, metric and parameter set: Scale is the metric's unit, Proportion HIB/LIB
  from its direction; a result PTS itself ran is described as PTS described it;
- one Entry per case: Value is the median, RawString every measured sample (":"-separated, as
  PTS writes them); its JSON says when the figure was served from cache and, for a --paired
  variant, its comparison with the reference case (the line the tables and the gate print).
Side metrics (cpu.*, disk.*, fs.*) stay out: PTS would chart them as benchmarks. The work per byte
moved (work.write_amp, flushes per GB, ...) goes in as results of its own, lower is better, their
description saying where it was counted: a chart of the work beside the speed's.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict

from lxml import etree

from .. import __version__
from ..measure import cache_check
from ..views.json_export import paired_index
from ..metrics import UNITS, WORK_COUNTED, WORK_PER_BYTE, Direction, is_headline
from ..verdicts.stats import summarize
from ..store.results import Store
from ..options import output_mark

TITLE_MAX = 50  # PTS's TitleString


def _timestamp(iso: str | None) -> str:
    when = dt.datetime.fromisoformat(iso) if iso else dt.datetime.now(dt.timezone.utc)
    return when.strftime("%Y-%m-%d %H:%M:%S")


def _value(v: float) -> str:
    return f"{v:.6g}"


def _device(d: object) -> str:
    if not isinstance(d, dict):
        return str(d)
    size = f"{round(int(d['size_bytes']) / 1e9)}GB " if d.get("size_bytes") else ""
    kind = d.get("model") or ("loop device" if d.get("backing_file") else d.get("path", "device"))
    return f"{size}{kind}"


def hardware_string(manifest: dict) -> str:
    host = manifest.get("host", {}) if isinstance(manifest.get("host"), dict) else {}
    parts = []
    if host.get("cpu"):
        parts.append(f"Processor: {host['cpu']} ({host.get('cpus', '?')} Cores)")
    if host.get("ram_bytes"):
        parts.append(f"Memory: {round(int(host['ram_bytes']) / 2**30)}GB")
    devices = manifest.get("devices")
    if isinstance(devices, list) and devices:
        parts.append("Disk: " + " + ".join(_device(d) for d in devices))
    return ", ".join(parts) or "unknown"


def software_string(manifest: dict, spec: dict) -> str:
    host = manifest.get("host", {}) if isinstance(manifest.get("host"), dict) else {}
    parts = []
    if host.get("kernel"):
        parts.append(f"Kernel: {host['kernel']}")
    fs = spec.get("fs") or manifest.get("fs")
    if fs:
        # PTS splits the Software line at ", ", and reads the File-System's name up to "(" (as
        # results.software_filesystem does): layout and options go in parentheses, no ", "
        details = [d for d in (spec.get("layout"), ",".join(f"{k}={v}" for k, v in (spec.get("mounted") or spec.get("options") or {}).items())) if d]
        parts.append(f"File-System: {fs}" + (f" ({'; '.join(details)})" if details else ""))
    return ", ".join(parts) or "unknown"


def _result_head(result: etree._Element, head: dict[str, str]) -> None:
    for tag in ("Identifier", "Title", "AppVersion", "Arguments", "Description", "Scale", "Proportion"):
        etree.SubElement(result, tag).text = head[tag]
    etree.SubElement(result, "DisplayFormat").text = "BAR_GRAPH"


def native_head(test_name: str, workload: str, workload_params: str, metric: str, params: str, first) -> dict:
    """How a result measured by fsbench itself is described."""
    wp, mp = json.loads(workload_params), json.loads(params)
    return {"Identifier": f"fsbench/{workload}", "Title": f"fsbench {metric}"[:TITLE_MAX], "AppVersion": "",
            "Arguments": " ".join(f"{k}={v}" for k, v in sorted(wp.items())),
            "Description": " - ".join([f"{k}: {v}" for k, v in sorted({**wp, **mp}.items())] + [test_name]),
            "Scale": first.unit, "Proportion": "LIB" if first.direction == Direction.LOWER else "HIB"}


def pts_record(case: dict, params: str) -> dict | None:
    """For a case PTS ran: its result as PTS described it (kept in the case's manifest)."""
    description = json.loads(params).get("result")
    return next((r for r in case["manifest"].get("pts_results", []) if r["description"] == description), None)


def pts_head(record: dict) -> dict:
    """A result PTS ran, described as PTS did, so it lines up with PTS's own result files."""
    return {"Identifier": record["identifier"], "Title": record["title"], "AppVersion": record["app_version"],
            "Arguments": record["arguments"], "Description": record["description"], "Scale": record["scale"],
            "Proportion": record["proportion"]}


def session_label(store: Store, session_id: int) -> str:
    """A session's name for identifiers that must stay distinct when result files are merged: the
    baseline name it was saved as, else "session N"."""
    names = store.baseline_names(session_id)
    return names[0] if names else f"session {session_id}"


def composite_tree(store: Store, session_id: int, title: str | None = None,
                   suffix: str | None = None) -> etree._ElementTree:
    """suffix: appended to every system identifier ("ext4-single (base)"), so two sessions with the
    same cases stay apart in PTS's merge-results, which does not rename colliding identifiers."""
    meta = store.session_export(session_id)
    session = meta["session"]
    cases = meta["cases"]

    def ident(case_id: str) -> str:
        return (f"{case_id} ({suffix})" if suffix else case_id)[:128]

    root = etree.Element("PhoronixTestSuite")
    gen = etree.SubElement(root, "Generated")
    etree.SubElement(gen, "Title").text = (title or f"fsbench session {session_id}")[:126]
    etree.SubElement(gen, "LastModified").text = _timestamp(session.get("finished") or session.get("started"))
    etree.SubElement(gen, "TestClient").text = f"fsbench {__version__}"
    etree.SubElement(gen, "Description").text = (
        f"fsbench session {session_id} ({session['token']}), started {session['started']}: "
        f"{' '.join(session['args'].get('argv', []))}. Each Value is the median of the runs (PTS's own "
        "result files give the mean); RawString holds every run.")[:2048]

    systems: dict[str, dict] = {}
    for case in cases:
        systems.setdefault(case["case_id"], case)
    for case_id, case in systems.items():
        system = etree.SubElement(root, "System")
        etree.SubElement(system, "Identifier").text = ident(case_id)
        etree.SubElement(system, "Hardware").text = hardware_string(case["manifest"])
        etree.SubElement(system, "Software").text = software_string(case["manifest"], case["spec"])
        etree.SubElement(system, "User").text = "root"
        etree.SubElement(system, "TimeStamp").text = _timestamp(session["started"])
        etree.SubElement(system, "TestClientVersion").text = f"fsbench {__version__}"
        etree.SubElement(system, "Notes").text = f"cache: {case['cache']}, data: {case['data']}; Value: median of the runs"
        etree.SubElement(system, "JSON").text = json.dumps(
            {"fsbench-manifest": case["manifest"], "fsbench-spec": case["spec"]}, sort_keys=True)

    by_test = {case["test"]: case for case in cases}
    every = store.series(session_id)
    shares = cache_check.share_index(every)
    paired = paired_index(store, session_id, cases)
    groups: dict[tuple, list] = defaultdict(list)
    for series in every:
        if not (is_headline(series.key.metric) or series.key.metric in WORK_PER_BYTE) or not series.values:
            continue
        test_name = series.key.test.split("::")[-1].split("[")[0]
        groups[(test_name, series.key.workload, series.key.workload_params, series.key.metric, series.key.params)].append(series)
    for (test_name, workload, workload_params, metric, params), members in groups.items():
        record = pts_record(by_test[members[0].key.test], params) if workload.startswith("pts.") else None
        head = pts_head(record) if record else native_head(test_name, workload, workload_params, metric, params,
                                                           members[0])
        # PTS-run throughput is stored in MB/s; shown again in the profile's own unit
        factor = UNITS.get(head["Scale"], ("", 1.0))[1] if members[0].unit != head["Scale"] else 1.0
        notes = {series.case_id: cache_check.cache_note(cache_check.figure_share(shares, series),
                                                         by_test[series.key.test]["cache"]) for series in members}
        cached = [case_id for case_id, note in notes.items() if note]
        if cached:
            head = {**head, "Description": f"{head['Description']} - served from cache: {', '.join(cached)}"}
        counted = by_test[members[0].key.test]["manifest"].get(WORK_COUNTED)
        if metric in WORK_PER_BYTE and counted:
            head = {**head, "Description": f"{head['Description']} - counted on {counted['devices']}"[:2048]}
        result = etree.SubElement(root, "Result")
        _result_head(result, head)
        data = etree.SubElement(result, "Data")
        for series in members:
            values = [v / factor for v in series.values]
            entry = etree.SubElement(data, "Entry")
            etree.SubElement(entry, "Identifier").text = ident(series.case_id)
            etree.SubElement(entry, "Value").text = _value(summarize(values).median)
            etree.SubElement(entry, "RawString").text = ":".join(_value(v) for v in values)
            extra = {"fsbench": notes[series.case_id]} if notes[series.case_id] else {}
            if series.key in paired:  # a --paired variant: its comparison with the reference case
                extra["fsbench-paired"] = paired[series.key]["line"]
            if extra:
                etree.SubElement(entry, "JSON").text = json.dumps(extra)
    return etree.ElementTree(root)


def composite_xml(store: Store, session_id: int, title: str | None = None, suffix: str | None = None) -> bytes:
    tree = composite_tree(store, session_id, title, suffix)
    tree.getroot().addprevious(etree.Comment(f" {output_mark('export')} "))
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8", pretty_print=True)
