"""A session as a Phoronix Test Suite result file (composite.xml), so PTS can show, merge,
convert and upload fsbench's pytest results.

- one System per case identifier (e.g. "btrfs-raid10-zstd"): hardware and software strings PTS
  shows, fsbench's manifest (filesystem, layout, options, devices, tool versions) in its JSON;
- one Result per test, metric and parameter set: Scale is the metric's unit, Proportion HIB/LIB
  from its direction;
- one Entry per case: Value is the median, RawString every measured sample (":"-separated, as
  PTS writes them).
Side metrics (cpu.*, disk.*, fs.*) stay out: PTS would chart them as benchmarks.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict

from lxml import etree

from .. import __version__
from ..metrics import Direction, is_headline
from ..stats import summarize
from ..store import Store

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
        options = ",".join(f"{k}={v}" for k, v in (spec.get("options") or {}).items())
        parts.append(f"File-System: {fs} {spec.get('layout', '')}".rstrip() + (f" ({options})" if options else ""))
    return ", ".join(parts) or "unknown"


def composite_tree(store: Store, session_id: int, title: str | None = None) -> etree._ElementTree:
    meta = store.session_export(session_id)
    session = meta["session"]
    cases = meta["cases"]
    root = etree.Element("PhoronixTestSuite")
    gen = etree.SubElement(root, "Generated")
    etree.SubElement(gen, "Title").text = (title or f"fsbench session {session_id}")[:126]
    etree.SubElement(gen, "LastModified").text = _timestamp(session.get("finished") or session.get("started"))
    etree.SubElement(gen, "TestClient").text = f"fsbench {__version__}"
    etree.SubElement(gen, "Description").text = (
        f"fsbench session {session_id} ({session['token']}), started {session['started']}: "
        f"{' '.join(session['args'].get('argv', []))}")[:2048]

    systems: dict[str, dict] = {}
    for case in cases:
        systems.setdefault(case["case_id"], case)
    for case_id, case in systems.items():
        system = etree.SubElement(root, "System")
        etree.SubElement(system, "Identifier").text = case_id[:128]
        etree.SubElement(system, "Hardware").text = hardware_string(case["manifest"])
        etree.SubElement(system, "Software").text = software_string(case["manifest"], case["spec"])
        etree.SubElement(system, "User").text = "root"
        etree.SubElement(system, "TimeStamp").text = _timestamp(session["started"])
        etree.SubElement(system, "TestClientVersion").text = f"fsbench {__version__}"
        etree.SubElement(system, "Notes").text = f"cache: {case['cache']}, data: {case['data']}"
        etree.SubElement(system, "JSON").text = json.dumps(
            {"fsbench-manifest": case["manifest"], "fsbench-spec": case["spec"]}, sort_keys=True)

    groups: dict[tuple, list] = defaultdict(list)
    for series in store.series(session_id):
        if not is_headline(series.key.metric) or not series.values:
            continue
        test_name = series.key.test.split("::")[-1].split("[")[0]
        groups[(test_name, series.key.workload, series.key.workload_params, series.key.metric, series.key.params)].append(series)
    for (test_name, workload, workload_params, metric, params), members in groups.items():
        first = members[0]
        result = etree.SubElement(root, "Result")
        etree.SubElement(result, "Identifier").text = f"fsbench/{workload}"
        etree.SubElement(result, "Title").text = f"fsbench {metric}"[:TITLE_MAX]
        etree.SubElement(result, "AppVersion").text = ""
        wp = json.loads(workload_params)
        mp = json.loads(params)
        etree.SubElement(result, "Arguments").text = " ".join(f"{k}={v}" for k, v in sorted(wp.items()))
        etree.SubElement(result, "Description").text = " - ".join(
            [f"{k}: {v}" for k, v in sorted({**wp, **mp}.items())] + [test_name])
        etree.SubElement(result, "Scale").text = first.unit
        etree.SubElement(result, "Proportion").text = "LIB" if first.direction == Direction.LOWER else "HIB"
        etree.SubElement(result, "DisplayFormat").text = "BAR_GRAPH"
        data = etree.SubElement(result, "Data")
        for series in members:
            entry = etree.SubElement(data, "Entry")
            etree.SubElement(entry, "Identifier").text = series.case_id[:128]
            etree.SubElement(entry, "Value").text = _value(summarize(series.values).median)
            etree.SubElement(entry, "RawString").text = ":".join(_value(v) for v in series.values)
    return etree.ElementTree(root)


def composite_xml(store: Store, session_id: int, title: str | None = None) -> bytes:
    tree = composite_tree(store, session_id, title)
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8", pretty_print=True)
