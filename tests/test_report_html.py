"""The self-contained HTML report, read as markup (the browser tests open it for real)."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from harness.report.html import results_html
from tests.test_report_support import make_project, run_eval

URL_ATTRIBUTES = {"src", "href", "srcset", "action", "formaction", "poster", "data", "xlink:href", "background"}


class Page(HTMLParser):
    """Every start tag with its attributes, and the text inside <style>."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self._in_style = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)

    def find(self, tag: str, **wanted: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag and all(attrs.get(k) == v for k, v in wanted.items())]


def external_references(html: str) -> list[str]:
    """Anything the page would fetch from elsewhere: URL attributes, CSS url() and @import, scripts."""
    page = Page(html)
    found = []
    for tag, attrs in page.tags:
        if tag == "script":
            found.append("<script>")
        for name, value in attrs.items():
            if name in URL_ATTRIBUTES and value and not value.startswith(("#", "data:")):
                found.append(f"<{tag} {name}={value!r}>")
    for css in page.styles:
        found += re.findall(r"url\([^)]*\)|@import[^;]*", css)
    return found


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    project = make_project(tmp_path_factory.mktemp("project"))
    out = tmp_path_factory.mktemp("out")
    code, results = run_eval(project, out, "--html", str(out / "report.html"))
    assert code == 1  # a check failed (the project also holds a case that cannot run: 1 wins over 2)
    return results, (out / "report.html").read_text(encoding="utf-8")


def test_the_page_fetches_nothing(run: tuple[dict[str, Any], str]) -> None:
    html = run[1]
    assert external_references(html) == []
    (policy,) = Page(html).find("meta", **{"http-equiv": "Content-Security-Policy"})
    assert "default-src 'none'" in policy["content"]


def test_the_check_finds_what_it_looks_for() -> None:
    planted = (
        '<img src="https://example.com/x.png"><link rel="stylesheet" href="//cdn.example/x.css">'
        '<style>body { background: url(http://example.com/bg.png) }</style><script src="a.js"></script>'
    )
    assert len(external_references(planted)) == 5


def test_every_case_failure_and_error_is_on_the_page(run: tuple[dict[str, Any], str]) -> None:
    results, html = run
    text = re.sub(r"<[^>]+>", " ", html)
    for case in results["cases"]:
        assert case["id"] in html
    failing = next(k for c in results["cases"] for k in c["checks"] if not k["passed"])
    assert failing["reason"].replace("'", "&#39;") in html
    assert "no such cassette" in text


def test_each_step_is_shown_with_its_tool_calls(run: tuple[dict[str, Any], str]) -> None:
    results, html = run
    sql_index = next(i for i, c in enumerate(results["cases"], 1) if c["id"].startswith("sql/"))
    page = Page(html)
    steps = [attrs for attrs in page.find("div") if (attrs.get("id") or "").startswith(f"case-{sql_index}-step-")]
    assert len(steps) == results["cases"][sql_index - 1]["trajectory"]["steps"]
    assert [s["class"].split()[1] for s in steps] == ["tool_use", "tool_use", "end_turn"]
    assert "toolcall is-error" in html and "no such column: created_at" in html


def test_tokens_per_step_are_stacked_bars_that_show_the_context_grow(run: tuple[dict[str, Any], str]) -> None:
    results, html = run
    dayflow = results["cases"][0]
    details = dayflow["trajectory"]["step_details"]
    chart = re.search(
        r'<svg class="chart" role="img" aria-label="tokens per step by kind: dayflow/brief/brief\.yaml"'
        r".*?</svg>",
        html,
        re.S,
    ).group(0)
    bars = re.findall(r'<g class="bar" data-step="(\d+)">(.*?)</g>', chart, re.S)
    assert [int(step) for step, _ in bars] == [step["index"] for step in details]
    heights = {
        int(step): {kind: float(h) for h, kind in re.findall(r'height="([\d.]+)" fill="#\w+" data-kind="(\w+)"', body)}
        for step, body in bars
    }
    assert set(heights[1]) == {k for k in ("input", "output") if details[0]["usage"][k]}
    assert heights[2]["input"] > heights[1]["input"], "the second request carries the tool results"
    ratio = details[1]["usage"]["input"] / details[0]["usage"]["input"]
    assert heights[2]["input"] / heights[1]["input"] == pytest.approx(ratio, rel=0.02)


def test_cost_per_case_is_a_bar_per_priced_case(run: tuple[dict[str, Any], str]) -> None:
    results, html = run
    chart = re.search(r'aria-label="cost per case.*?</svg>', html, re.S).group(0)
    priced = [c for c in results["cases"] if c["cost_usd"] is not None and c["trajectory"]]
    assert len(re.findall(r"<rect ", chart)) == len(priced)
    for case in priced:
        assert f"${case['cost_usd']:.4f}" in chart


def test_recorded_text_is_escaped_not_run(run: tuple[dict[str, Any], str]) -> None:
    results = copy.deepcopy(run[0])
    step = results["cases"][0]["trajectory"]["step_details"][-1]
    step["response"]["blocks"][0]["text"] = "<script>alert(1)</script>"
    results["cases"][1]["checks"][1]["reason"] = '<img src="https://example.com/x">'
    html = results_html(results)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert external_references(html) == []
