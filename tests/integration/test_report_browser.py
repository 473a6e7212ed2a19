"""The HTML report of a real short session (ext4 and btrfs, dd and a two-record IOzone sweep),
opened in a real browser: headless Chromium (Debian's chromium) lays it out, a script in a copy of
the page measures every figure and lists what the page loaded from outside, and a screenshot
must show a page, not a blank one. The session also shows its line per case (no -q)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from matplotlib import image

from conftest import execute_pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)

# in <head>: errors of the page are collected; at the end of <body>: each figure's laid-out size
# and every resource fetched, written where --dump-dom shows them
HEAD_PROBE = ("<script>window.fsbenchErrors = []; window.addEventListener('error', "
              "e => window.fsbenchErrors.push(String(e.message || e.target && e.target.src)), true);</script>")
BODY_PROBE = """<script>
const out = document.createElement('pre');
out.id = 'fsbench-probe';
out.textContent = JSON.stringify({
  figures: [...document.querySelectorAll('figure')].map(f => {
    const svg = f.querySelector('svg'); if (!svg) return null;
    const r = svg.getBoundingClientRect(); return [r.width, r.height]; }),
  resources: performance.getEntriesByType('resource').map(e => e.name),
  errors: window.fsbenchErrors});
document.body.appendChild(out);
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.root
def test_a_real_sessions_report_opens_in_a_browser_with_every_figure(tmp_path, no_leftovers):
    if CHROMIUM is None:
        pytest.skip("needs a browser: Debian package chromium")
    page = tmp_path / "report.html"
    done = execute_pytest(["benchmarks/test_dd.py", "benchmarks/test_iozone.py", "-k", "not throughput",
                       "--fs=ext4,btrfs", "--layout=single", "--runs=2", "--warmup=0", "--dd-size=32M",
                       "--iozone-record=64K,1M", "--iozone-file=32M", "--iozone-tests=write,read",
                       f"--store={tmp_path / 'fsbench.db'}", f"--image-dir={tmp_path / 'images'}",
                       f"--report={page}"], cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"fsbench: report written to {page}" in done.stdout
    assert re.search(r"^\[ ?\d+/\d+\] test_dd_write\[ext4-single-1M\] passed [\d.]+ s: dd\.write [\d.]+ MB/s  ",
                     done.stdout, re.M)
    assert re.search(r"^time: session \d+ s: measured \d+ s \(\d+%\)", done.stdout, re.M)

    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("<style>", HEAD_PROBE + "<style>", 1).replace("</body>", BODY_PROBE + "</body>"))
    dom = chromium("--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="fsbench-probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:] + dom.stderr[-2000:]
    measured = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    # dd write and read, IOzone write and read at each record: 6 box plots, and the record-size curves
    assert len(measured["figures"]) == 7
    assert all(size and size[0] > 100 and size[1] > 50 for size in measured["figures"]), measured["figures"]
    assert measured["resources"] == [] and measured["errors"] == []

    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri())
    pixels = image.imread(str(shot))[..., :3]
    ink = (pixels.mean(axis=2) < 0.9).mean()
    assert 0.02 < ink < 0.6 and pixels.std() > 0.05, f"a blank-looking screenshot: {ink:.3f} of it drawn"
