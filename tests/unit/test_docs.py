"""The documentation site's generated pages are the ones the registries and the layers give
(fsbench docs --write docs), and they carry every option, parameter, filesystem and unit."""

from __future__ import annotations

import re
from pathlib import Path

from test_layers import LAYERS

from pytest_fsbench import docs
from pytest_fsbench.filesystems import FILESYSTEMS
from pytest_fsbench.workloads import PARAMS

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "docs"


def test_the_site_carries_the_generated_pages():
    pages = docs.generated_pages(SITE / docs.LAYERS_FILE)
    assert {"reference/options.md", "reference/layers.md", "architecture.svg"} <= set(pages)
    assert docs.stale_pages(SITE, pages) == [], "run: .venv/bin/fsbench docs --write docs"


def test_every_option_parameter_and_filesystem_has_a_row():
    pages = docs.reference_pages()
    options, params, filesystems = (pages[f"reference/{name}.md"] for name in
                                    ("options", "workload-parameters", "filesystems"))
    assert all(f"`--{param.name}` | `{param.ini}`" in params for param in PARAMS)
    assert all(f"\n| {fs} | " in filesystems for fs in FILESYSTEMS)
    assert "| `--fs` | `fsbench_fs` |" in options and "| `--save=NAME` |  |" in options


def test_the_layers_are_read_from_the_test_that_enforces_them():
    read = docs.layers_in(SITE / docs.LAYERS_FILE)
    assert tuple(units for units, _ in read) == LAYERS
    assert read[-1][1] == "the ground" and all(caption for _, caption in read)


def test_every_unit_is_drawn_and_described():
    layers = docs.layers_in(SITE / docs.LAYERS_FILE)
    svg, table = docs.layers_svg(layers), docs.layers_page(layers)
    units = [unit for units, _ in layers for unit in units]
    assert all(re.search(rf">{unit}(/|\.py)</text>", svg) for unit in units)
    assert all(re.search(rf"\| `{unit}(/|\.py)` \| \S", table) for unit in units)
    # each layer is a row below the one before: the picture's boxes go down with the layers
    first_rows = [int(re.search(rf'y="(\d+)"[^>]*/><text[^>]*>{units[0]}(/|\.py)<', svg).group(1))
                  for units, _ in layers]
    assert first_rows == sorted(first_rows) and len(set(first_rows)) == len(layers)


def test_a_summary_is_the_docstrings_first_sentence():
    assert docs.summary("store").startswith("The one place that stores results")
    assert docs.summary("store").endswith(".") and "\n" not in docs.summary("store")


def test_writing_rewrites_only_stale_pages(tmp_path):
    pages = {"a.md": "A\n", "sub/b.md": "B\n"}
    assert docs.write_pages(tmp_path, pages) == ["a.md", "sub/b.md"]
    (tmp_path / "a.md").write_text("edited by hand\n")
    assert docs.write_pages(tmp_path, pages) == ["a.md"]
    assert (tmp_path / "a.md").read_text() == "A\n" and docs.stale_pages(tmp_path, pages) == []


def test_the_readme_is_a_first_screen_that_links_to_the_site():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(links) >= 10 and all((REPO / link).is_file() for link in links), links
    steps = re.findall(r"^## (\d)\. (.+)$", readme, re.M)
    assert [number for number, _ in steps] == ["1", "2", "3", "4", "5"], steps


def paragraphs(markdown: str) -> list[str]:
    """The prose of a Markdown page: its paragraphs and list items, each as one line (code blocks,
    headings and tables left out)."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    found = []
    for block in re.split(r"\n\s*\n", text):
        for item in re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", block):
            lines = [line.strip() for line in item.splitlines() if not line.lstrip().startswith(("#", "|"))]
            if lines:
                found.append(re.sub(r"^(?:[-*]|\d+\.) ", "", " ".join(lines)))
    return found


def test_the_readme_and_getting_started_have_no_paragraph_over_120_words():
    """Issue 43: getting started's package paragraph was about 300 words; the site's test checks
    the first screen of every page, these two pages are read whole."""
    for page in (REPO / "README.md", REPO / "docs" / "getting-started.md"):
        said = paragraphs(page.read_text())
        assert len(said) > 10, page
        long = [(len(p.split()), p[:60]) for p in said if len(p.split()) > 120]
        assert not long, (page.name, long)
    assert [len(p.split()) for p in paragraphs("a b\nc\n\n- d e\n- f\n\n```\ng h i\n```\n| j | k |\n")] == [3, 2, 1]
