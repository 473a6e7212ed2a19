"""The HTML report of a real short session (ext4 and btrfs, dd and a two-record IOzone sweep),
opened in a real browser: headless Chromium (Debian's chromium) lays it out, a script in a copy of
the page measures every figure and lists what the page loaded from outside, and a screenshot
must show a page, not a blank one. The session also shows its line per case (no -q). A study's
page, of a real small session of `fsbench study`, read at 1400 px: every column within the
window, its published table a row per configuration."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import html as lxml_html
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


# at the end of <body>: how many cells reach past the window, and the page's own width
WIDTH_PROBE = """<script>
const out = document.createElement('pre');
out.id = 'fsbench-probe';
out.textContent = JSON.stringify({window: window.innerWidth, page: document.documentElement.scrollWidth,
  past: [...document.querySelectorAll('th, td')].filter(c => c.getBoundingClientRect().right > window.innerWidth)
        .map(c => c.textContent.slice(0, 40))});
document.body.appendChild(out);
</script>"""


def laid_out(page: Path, width: int) -> dict:
    """What WIDTH_PROBE found in the page laid out in a window `width` px wide."""
    probe = page.with_name("width-probe.html")
    probe.write_text(page.read_text().replace("</body>", WIDTH_PROBE + "</body>"))
    dom = chromium(f"--window-size={width},2200", "--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="fsbench-probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:] + dom.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.root
def test_a_study_page_read_at_1400_px_shows_every_column_and_a_row_per_configuration(tmp_path, no_leftovers):
    """`fsbench study btrfs-options` narrowed to its single-disk Btrfs IOzone cases, small: at
    1400 px no cell reaches past the window; the article's table is a row per configuration (row 5:
    Btrfs Standard Standard once, not once per test) with write, rewrite, read and reread side by
    side; a figure the page cache served is marked there as in the table of every case, and At a
    glance ranks none of them best."""
    if CHROMIUM is None:
        pytest.skip("needs a browser: Debian package chromium")
    page = tmp_path / "study.html"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_fsbench.cli", "study", "btrfs-options", "-o", str(page),
         "-k", "btrfs-single and test_iozone and not storage", "--cache=drop", "--iozone-file=512M", "--runs=2",
         "--warmup=0", f"--image-dir={tmp_path / 'images'}", f"--store={tmp_path / 'fsbench.db'}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    found = laid_out(page, 1400)
    assert found["past"] == [] and found["page"] <= found["window"], found

    tree = lxml_html.fromstring(page.read_text())
    [table] = tree.find_class("published")
    heads = [[th.text_content() for th in tr] for tr in table.find("thead").iter("tr")]
    assert heads[0][-4:] == ["write", "rewrite", "read", "reread"] and heads[1] == ["published", "fsbench", "ratio"] * 4
    rows = [[td.text_content() for td in tr.iter("td")] for tr in table.find("tbody").iter("tr")]
    labels = [row[0] for row in rows]
    assert "row 5: Btrfs Standard Standard" in labels and len(labels) == len(set(labels)) >= 4, labels
    # a test's fsbench cell says (cache) where the page cache served that test in the table of every case
    cached = {test for test in ("write", "rewrite", "read", "reread") for tr in tree.iter("tr")
              if f"iozone.{test}" in [td.text_content() for td in tr.iter("td")][1:3]  # after the options, if any
              and tr[-1].text_content().startswith("served from cache")}
    marked = {heads[0][-4:][(j - (len(row) - 12)) // 3] for row in rows for j, cell in enumerate(row)
              if cell.endswith("(cache)")}
    assert marked == cached, (marked, cached)
    [glance] = tree.find_class("glance")
    assert not [tr.text_content() for tr in glance.iter("tr")
                if tr.get("class") == "best" and "served from cache" in tr.text_content()]
