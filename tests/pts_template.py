"""The part of PTS's results parser the fsbench profiles use, to check their results-definition
files against real tool output without PTS: the line is found by LineHint (the first line
containing it) or LineBeforeHint (the line after the first line containing it); the value is
the whitespace token at #_RESULT_#'s position in the template; StripResultPostfix and
DivideResultBy apply. The PTS integration tests run the same profiles through PTS itself."""

from __future__ import annotations

from lxml import etree


def parsers(results_definition: str) -> list[dict[str, str]]:
    doc = etree.parse(results_definition)
    return [{child.tag: (child.text or "") for child in p} for p in doc.iter("ResultsParser")]


def value(parser: dict[str, str], output: str) -> float | None:
    lines = output.splitlines()
    line = None
    if parser.get("LineHint"):
        line = next((ln for ln in lines if parser["LineHint"] in ln), None)
    elif parser.get("LineBeforeHint"):
        index = next((i for i, ln in enumerate(lines) if parser["LineBeforeHint"] in ln), None)
        line = lines[index + 1] if index is not None and index + 1 < len(lines) else None
    if line is None:
        return None
    template_line = next(t for t in parser["OutputTemplate"].splitlines() if "#_RESULT_#" in t)
    position = template_line.split().index("#_RESULT_#")
    tokens = line.split()
    if position >= len(tokens):
        return None
    token = tokens[position]
    postfix = parser.get("StripResultPostfix")
    if postfix and token.endswith(postfix):
        token = token[: -len(postfix)]
    try:
        number = float(token)
    except ValueError:
        return None
    return number / float(parser.get("DivideResultBy") or 1)


def matching(parsers_: list[dict[str, str]], arguments: str) -> list[dict[str, str]]:
    """The parsers PTS applies for these arguments (MatchToTestArguments is a substring test)."""
    return [p for p in parsers_ if not p.get("MatchToTestArguments") or p["MatchToTestArguments"] in arguments]
