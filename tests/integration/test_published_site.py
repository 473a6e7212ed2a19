"""`fsbench publish` on real sessions (issue 43): dd read on ext4 loop images, run by two hosts (a
UTS namespace names each: a session's host is its manifest's hostname). alpha's last three of six
sessions keep their loop images on a slower disk: an ext4 on a loop device whose image is on
fsbench's own paced FUSE storage (100 MB/s), as a machine whose disk was replaced, nothing in the
software changed. beta's second session is gated against its first. The site, opened in headless
Chromium, marks the change point `fsbench changes` finds on alpha's chart and in its index cell,
lists it, shows beta's gate verdict, links each host's newest session to its report; publishing
again writes nothing; the same sessions pushed to PostgreSQL publish the same pages."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import html
from matplotlib import image

from pytest_fsbench.store.results import Store
from pytest_fsbench.verdicts import changes
from pytest_fsbench.verdicts.gate import line_verdict
from pytest_fsbench.views import history, site

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)
ALPHA, BETA = "fsbench-pub-alpha", "fsbench-pub-beta"
READ = history.Case("benchmarks/test_dd.py::test_dd_read[ext4-single-1M]", "dd",
                    '{"bs":"1M","data":"random","size":"16M"}')
#: at the end of <body>: every change point's line as laid out, the figures' sizes, what the page fetched
PROBE = """<script>
const out = document.createElement('pre');
out.id = 'fsbench-probe';
out.textContent = JSON.stringify({
  changes: [...document.querySelectorAll('line.change')].map(l => {
    const r = l.getBoundingClientRect();
    return {session: l.dataset.session, classes: l.getAttribute('class'), height: r.height, p: l.dataset.p}; }),
  charts: [...document.querySelectorAll('svg.chart')].map(s => [s.getAttribute('aria-label').split(' ')[0],
                                                               s.getBoundingClientRect().width,
                                                               s.getBoundingClientRect().height]),
  cells: [...document.querySelectorAll('td.cell')].map(c => [c.dataset.host, c.getAttribute('class'), c.textContent]),
  resources: performance.getEntriesByType('resource').map(e => e.name)});
document.body.appendChild(out);
</script>"""

pytestmark = pytest.mark.root


def chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def laid_out(page: Path) -> dict:
    """What PROBE finds in the page as Chromium lays it out (a copy beside it, so its links hold)."""
    probe = page.with_name(f"probe-{page.name}")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = chromium("--window-size=1400,1000", "--dump-dom", probe.as_uri())
    probe.unlink()
    found = re.search(r'<pre id="fsbench-probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:] + dom.stderr[-2000:]
    return json.loads(html.fromstring(found.group(0)).text_content())


def session(host: str, store: Path, images: Path, *extra: str) -> None:
    """A real session of dd read (16M, 3 runs) on ext4 as host (its hostname in a UTS namespace)."""
    argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host, sys.executable, "-m", "pytest",
            "-p", "no:cacheprovider", "benchmarks/test_dd.py", "-k", "read", "--fs=ext4", "--runs=3", "--warmup=0",
            "--dd-size=16M", "--image-size=512M", f"--store={store}", f"--image-dir={images}", "-q", *extra]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-2000:]  # 1: the gate may fail beta's


@pytest.fixture
def slow_disk(tmp_path):
    """A directory on a disk of 100 MB/s: ext4 on a loop device whose image is on fsbench's paced
    FUSE storage (system/throttle.py, what --storage-rate uses); skipped without FUSE."""
    if not Path("/dev/fuse").exists():
        pytest.skip("no FUSE in this kernel (/dev/fuse), so no slower disk can be made")
    pytest.importorskip("mfusepy", reason="the paced storage needs mfusepy (./fsbench.sh setup installs it)")
    from pytest_fsbench.system.commands import execute
    from pytest_fsbench.system.throttle import ThrottledStorage

    storage = ThrottledStorage(tmp_path / "paced-backing", tmp_path / "paced", 100.0, execute)
    mounted, loop = tmp_path / "slow", None
    storage.start()
    try:
        subprocess.run(["truncate", "-s", "2G", str(tmp_path / "paced" / "disk.img")], check=True)
        loop = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(tmp_path / "paced" / "disk.img")],
                              check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
        mounted.mkdir()
        subprocess.run(["mount", loop, str(mounted)], check=True)
        yield mounted
    finally:
        subprocess.run(["umount", str(mounted)], check=False)
        if loop:
            subprocess.run(["losetup", "--detach", loop], check=False)
        storage.stop()


def publish(site_dir: Path, store: Path | str, *extra: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "publish", str(site_dir), f"--store={store}",
                           *extra], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return " ".join(done.stdout.split())


def test_real_sessions_of_two_hosts_publish_a_site_that_marks_the_change_point(tmp_path, slow_disk, no_leftovers,
                                                                             postgres_server):
    if CHROMIUM is None:
        pytest.skip("needs a browser: Debian package chromium")
    store, images = tmp_path / "fsbench.db", tmp_path / "images"
    for number in range(6):
        session(ALPHA, store, slow_disk if number >= 3 else images)
    session(BETA, store, images, "--save=beta")
    session(BETA, store, images, "--compare=beta", "--fail-on-regression=50%")
    opened = Store(store, create=False)
    rows = {host: [row.id for row in opened.sessions(host=host)] for host in (ALPHA, BETA)}
    [found] = changes.detect(opened, ALPHA)  # the slower disk, and nothing else
    assert found.session.session_id == rows[ALPHA][3] and found.verdict == "worse" and found.change_pct < -50
    gate = [line for case in opened.session_export(rows[BETA][1])["cases"] for line in case["manifest"]["gate"]]
    site_dir = tmp_path / "site"
    out = publish(site_dir, store, "--reports=newest")
    assert "8 sessions (8 read from the store)" in out and "2 reports written" in out

    page = site_dir / site.host_path(READ, ALPHA)
    shown = laid_out(page)
    assert shown["resources"] == []
    assert [metric for metric, _, _ in shown["charts"]] == ["dd.read", "work.read_amp", "work.requests_per_mb"]
    assert all(width > 300 and height > 100 for _, width, height in shown["charts"])
    marks = [m for m in shown["changes"] if m["session"] == str(found.session.session_id)]
    assert marks and "worse" in marks[0]["classes"] and marks[0]["height"] > 50
    assert float(marks[0]["p"]) == pytest.approx(found.pvalue, rel=0.05)
    tree = html.fromstring(page.read_text())
    newest = tree.xpath("//tbody/tr[1]/td[1]")[0]
    assert newest.xpath("a/@href") == [f"../../reports/session-{rows[ALPHA][-1]}.html"]
    assert f"fsbench session {rows[ALPHA][-1]}" in (site_dir / "reports" / f"session-{rows[ALPHA][-1]}.html").read_text()

    index = laid_out(site_dir / "index.html")
    cells = {host: (classes, text) for host, classes, text in index["cells"]}
    assert "worse" in cells[ALPHA][0].split() and f"worse {found.change_pct:+.1f}%" in cells[ALPHA][1]
    assert any(m["session"] == str(found.session.session_id) for m in index["changes"])  # the sparkline's tick
    assert line_verdict(gate[0]["line"]) in cells[BETA][1]  # the gate's word on beta's newest session
    listed = html.fromstring((site_dir / "changes.html").read_text()).xpath("//tbody/tr")
    assert [[td.text_content() for td in tr.xpath("td")][1:5] for tr in listed if ALPHA in tr.text_content()] == [
        [str(found.session.session_id), ALPHA, "test_dd_read[ext4-single-1M]", "dd.read"]]
    assert all(p.stat().st_size < 2_000_000 for p in site_dir.rglob("*.html"))

    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1400,1000", page.as_uri())
    pixels = image.imread(str(shot))[..., :3]
    assert 0.02 < (pixels.mean(axis=2) < 0.9).mean() < 0.6, "a blank-looking page"

    assert re.search(r"\(0 read from the store\), .* \(0 series analysed\); 0 of \d+ pages written", publish(
        site_dir, store, "--reports=newest"))

    # the same sessions in a team's PostgreSQL store: the same pages (but the index's line naming the store)
    url = postgres_server.new_database()
    for session_id in rows[ALPHA] + rows[BETA]:
        subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "push", str(session_id), f"--store={store}",
                        f"--to={url}"], cwd=REPO, check=True, capture_output=True)
    served = tmp_path / "site-pg"
    publish(served, url)
    for name in (site.host_path(READ, ALPHA), site.host_path(READ, BETA), site.case_path(READ), "changes.html"):
        assert (served / name).read_text() == (site_dir / name).read_text().replace(
            f"<a href='../../reports/session-{rows[ALPHA][-1]}.html'>{rows[ALPHA][-1]}</a>", str(rows[ALPHA][-1])
        ).replace(f"<a href='../../reports/session-{rows[BETA][-1]}.html'>{rows[BETA][-1]}</a>", str(rows[BETA][-1])
                  ).replace(f"<a href='reports/session-{rows[ALPHA][-1]}.html'>{rows[ALPHA][-1]}</a>",
                            str(rows[ALPHA][-1])), name
