"""The documentation site builds with `mkdocs build --strict` (a broken link, a page missing from
the nav or a nav entry without its page fails it), and every page of it opens in a real browser:
headless Chromium (Debian's chromium) lays each page out as a web server on this machine serves it
(its search loads its index over HTTP, which a file:// page may not), and a script added to a
copy of it reports the page's title, its heading, the navigation it rendered, its images' sizes, what it
loaded from outside and its errors."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)
MKDOCS = Path(sys.executable).with_name("mkdocs")

PROBE = """<script>
window.addEventListener('load', () => {
  const out = document.createElement('pre');
  out.id = 'fsbench-probe';
  out.textContent = JSON.stringify({
    title: document.title,
    h1: (document.querySelector('article h1') || {}).textContent || null,
    nav: [...document.querySelectorAll('nav.md-nav--primary .md-nav__link')].map(a => a.textContent.trim()),
    images: [...document.querySelectorAll('article img')].map(i => [i.getAttribute('src'), i.naturalWidth]),
    outside: performance.getEntriesByType('resource').map(e => e.name)
      .filter(n => !n.startsWith(location.origin)),
    errors: window.fsbenchErrors});
  document.body.appendChild(out);
});
</script>"""
HEAD_PROBE = ("<script>window.fsbenchErrors = []; window.addEventListener('error', "
              "e => window.fsbenchErrors.push(String(e.message || e.target && e.target.src)), "
              "true);</script>")


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the requests are not the test's output
        pass


@pytest.fixture(scope="module")
def served(site):
    """The built site at an http://127.0.0.1 address of its own."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()
    server.server_close()


def chromium_dom(url: str, profile: Path, timeout: float = 120, budget: bool = True) -> str:
    """The page's DOM as headless Chromium laid it out (budget: with 5 s of virtual time for its
    scripts), then the end of what Chromium said on standard error."""
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           "--no-first-run", f"--user-data-dir={profile}",
                           *(["--virtual-time-budget=5000"] if budget else []), "--dump-dom", url],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return done.stdout + done.stderr[-2000:]


def probe_result(dom: str, what: str):
    """The JSON the page's probe wrote into its <pre id="fsbench-probe">, as the DOM holds it."""
    found = re.search(r'<pre id="fsbench-probe">(.*?)</pre>', dom, re.S)
    assert found, f"{what}: no probe in the page as the browser laid it out:\n{dom[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def nav_titles() -> list[str]:
    """The page titles of mkdocs.yml's nav (each "- Title: page.md" line)."""
    text = (REPO / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    return re.findall(r"^\s+- ([^:#]+): \S+\.md$", text, re.M)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if not MKDOCS.exists():
        pytest.skip("needs MkDocs Material: pip install -e '.[docs]' (./fsbench.sh setup installs it)")
    out = tmp_path_factory.mktemp("docs-site")
    built = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def test_the_site_builds_strictly_with_a_page_for_every_nav_entry(site):
    titles = nav_titles()
    assert len(titles) >= 15 and "Session options" in titles and "Concepts" in titles
    pages = sorted(site.rglob("index.html"))
    assert len(pages) == len(titles), [str(p.relative_to(site)) for p in pages]
    assert (site / "architecture.svg").read_text().startswith("<svg")


def probed(site: Path, served: str, page: Path, profile: Path) -> dict:
    """What the probe saw of page (a built index.html) as the browser laid it out."""
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("<head>", "<head>" + HEAD_PROBE, 1)
                     .replace("</body>", PROBE + "</body>", 1))
    return probe_result(chromium_dom(f"{served}/{probe.relative_to(site)}", profile), str(page))


def test_every_page_renders_its_title_and_the_nav_in_a_browser(site, served, tmp_path):
    if CHROMIUM is None:
        pytest.skip("needs a browser: Debian package chromium")
    titles = nav_titles()
    for page in sorted(site.rglob("index.html")):
        seen, where = probed(site, served, page, tmp_path / "profile"), page.relative_to(site)
        assert seen["h1"] and seen["title"].startswith(seen["h1"].strip().rstrip("¶")), (where, seen)
        assert seen["title"].endswith("fsbench"), (where, seen["title"])
        assert set(titles) <= set(seen["nav"]), (where, set(titles) - set(seen["nav"]))
        assert all(width > 0 for _, width in seen["images"]), (where, seen["images"])
        assert seen["outside"] == [] and seen["errors"] == [], (where, seen)


def test_the_architecture_page_shows_the_layers_picture(site, served, tmp_path):
    if CHROMIUM is None:
        pytest.skip("needs a browser: Debian package chromium")
    page = site / "architecture" / "index.html"
    assert 'src="../architecture.svg"' in page.read_text()
    seen = probed(site, served, page, tmp_path / "profile")
    assert seen["images"] and seen["images"][0][1] > 500, seen["images"]


#: a page of the site that holds every other one in a frame WIDTH px wide and reports how each laid
#: out: a frame's load event, which fires before its parent's (the parent waits for its frames), records
#: it, so the DOM Chromium dumps at the parent's load holds every record (one browser per width: a
#: browser per page took 1.6 s, 65 s for both widths)
HARNESS = """<!DOCTYPE html><html><head><script>
const SCREEN = 900, found = {};
function words(el) { return el.textContent.trim().split(/\\s+/).filter(Boolean).length; }
function record(frame) {
  const doc = frame.contentDocument, win = frame.contentWindow;
  const article = doc.querySelector('article');
  const h1 = article.querySelector('h1');
  let first = h1.nextElementSibling;
  while (first && first.tagName === 'A') first = first.nextElementSibling;
  const codes = [...article.querySelectorAll('pre > code')];
  const then = first && first.nextElementSibling;
  found[frame.dataset.page] = {
    opens: first ? (first.matches('div.highlight, pre') ? 'code' : first.querySelector('img') ? 'figure'
                    : first.tagName + ': ' + first.textContent.slice(0, 60)) : 'nothing',
    then: then ? (then.matches('div.highlight, pre') ? 'code' : then.querySelector('img') ? 'figure'
                  : then.matches('table') || then.querySelector('table') ? 'table'
                  : then.tagName + ': ' + then.textContent.slice(0, 60)) : 'nothing',
    cut: codes.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent.slice(0, 60)),
    overflow: doc.documentElement.scrollWidth > win.innerWidth + 1,
    long: [...article.querySelectorAll('p, li')]
      .filter(p => p.getBoundingClientRect().top < SCREEN && !p.querySelector('li'))
      .map(p => [words(p), p.textContent.trim().slice(0, 60)]).filter(([n]) => n > 120),
    images: [...article.querySelectorAll('img')].map(i => [i.getAttribute('src'), i.naturalWidth,
                                                         i.getBoundingClientRect().width])};
  document.getElementById('fsbench-probe').textContent = JSON.stringify(found);
}
</script></head><body><pre id="fsbench-probe"></pre>
%s
</body></html>"""
#: one frame of the harness
FRAME = '<iframe data-page="{page}" src="{page}" width="{width}" height="900" onload="record(this)"></iframe>'
#: the smallest text of the code's drawing the site may show, in px (issue 43: its captions were 7 px)
SMALLEST_TEXT = 12


@pytest.mark.parametrize("width", [1400, 800])
def test_every_page_shows_before_it_tells_and_fits_the_window(site, served, tmp_path, width):
    """Issue 43, as a reader sees the site in Chromium at 1400 and 800 px: every page opens with a
    command and its output (the block after it: the output, a figure, or the table a reference
    page prints), or a figure; no paragraph of its first screen is over 120 words; no code block
    is cut at the right (a long line wraps); nothing is wider than the window; the drawing of the
    code's layers shows its text at 12 px or more. Every page is checked before the test fails, so
    its message names each one that does not."""
    if CHROMIUM is None:
        pytest.skip("needs a browser: Debian package chromium")
    pages = sorted(str(page.relative_to(site).parent) + "/" for page in site.rglob("index.html"))
    harness = site / f"harness-{width}.html"
    harness.write_text(HARNESS % "\n".join(FRAME.format(page=page, width=width) for page in pages))
    seen = probe_result(chromium_dom(f"{served}/{harness.name}", tmp_path / "profile", timeout=300, budget=False),
                        harness.name)
    assert len(seen) == len(nav_titles()), sorted(seen)
    wrong = {}
    for page, laid_out in seen.items():
        opens = laid_out["opens"] == "figure" or laid_out["opens"] == "code" and laid_out["then"] in (
            "code", "figure", "table")
        fails = {"opens": (laid_out["opens"], laid_out["then"])} if not opens else {}
        fails.update({what: laid_out[what] for what in ("cut", "overflow", "long") if laid_out[what]})
        if not all(natural > 0 and shown > 0 for _, natural, shown in laid_out["images"]):
            fails["images"] = laid_out["images"]
        if fails:
            wrong[page] = fails
    assert not wrong, wrong
    drawing = [(natural, shown) for laid_out in seen.values() for src, natural, shown in laid_out["images"]
               if src.endswith("architecture.svg")]
    # its smallest text, in its style sheet (font-size: 15px) or an attribute (font-size="16")
    caption = min(map(float, re.findall(r'font-size(?:: *|=")([\d.]+)', (site / "architecture.svg").read_text())))
    assert drawing and all(caption * shown / natural >= SMALLEST_TEXT for natural, shown in drawing), drawing
