"""Inline SVG charts for the HTML report, drawn here so the page needs no script and fetches nothing.

Two shapes: tokens per step as stacked bars (one bar per step, one band per kind: input, cache write,
cache read, output), which shows the context growing as tool results pile up; and labelled horizontal
bars (cost per case; baseline beside candidate in a comparison). Every label goes through
markupsafe.escape; native <title> elements give each bar a tooltip without JavaScript.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from harness.report._text import KIND_LABELS, cost, tokens

__all__ = ["KIND_COLORS", "cost_bars", "nice_ceiling", "step_token_bars"]

# Bottom to top: what the request carried (fresh, written to cache, read from cache), then the answer.
STACK = ("input", "cache_write", "cache_read", "output")
KIND_COLORS = {"input": "#4e79a7", "cache_write": "#f28e2b", "cache_read": "#59a14f", "output": "#e15759"}
SIDE_COLORS = {"baseline": "#9aa5b1", "candidate": "#4e79a7"}
_FONT = 'font-family="system-ui, sans-serif"'


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten at or above `value` (axis tops read as round numbers)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def step_token_bars(
    steps: Sequence[Mapping[str, Any]], *, scale_max: float | None = None, title: str = "tokens per step"
) -> Markup:
    """Stacked bars, one per step (`steps`: step_details records). `scale_max` shares a y axis between charts."""
    if not steps:
        return Markup("")
    totals = [sum(int(step["usage"].get(kind, 0)) for kind in STACK) for step in steps]
    top = nice_ceiling(max(scale_max or 0, *totals))
    left, right, upper, lower = 64, 12, 28, 34
    narrowest = max(14, min(56, 640 // len(steps)))
    width = max(left + right + narrowest * len(steps), 400)  # wide enough for the legend
    slot = (width - left - right) / len(steps)
    bar_width = min(slot * 0.7, 40)
    plot_height = 180
    height = upper + plot_height + lower
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" {_FONT} font-size="11">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in range(5):
        value = top * tick / 4
        y = upper + plot_height - plot_height * tick / 4
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{_number(y)}" y2="{_number(y)}" stroke="#e3e6ea"/>')
        parts.append(f'<text x="{left - 6}" y="{_number(y + 4)}" text-anchor="end" fill="#555">{tokens(value)}</text>')
    for position, (step, total) in enumerate(zip(steps, totals, strict=True)):
        x = left + slot * position + (slot - bar_width) / 2
        y = upper + plot_height
        tip = f"step {step['index']}: " + " · ".join(
            f"{KIND_LABELS[kind]} {tokens(step['usage'].get(kind, 0))}" for kind in STACK
        )
        parts.append(f'<g class="bar" data-step="{step["index"]}"><title>{escape(tip)}</title>')
        for kind in STACK:
            count = int(step["usage"].get(kind, 0))
            if count <= 0:
                continue
            h = plot_height * count / top
            y -= h
            parts.append(
                f'<rect x="{_number(x)}" y="{_number(y)}" width="{_number(bar_width)}" height="{_number(h)}" '
                f'fill="{KIND_COLORS[kind]}" data-kind="{kind}"/>'
            )
        parts.append("</g>")
        label_x = _number(x + bar_width / 2)
        parts.append(
            f'<text x="{label_x}" y="{_number(y - 4)}" text-anchor="middle" fill="#333" font-size="10">'
            f"{tokens(total)}</text>"
        )
        axis_y = upper + plot_height + 14
        parts.append(f'<text x="{label_x}" y="{axis_y}" text-anchor="middle" fill="#555">{step["index"]}</text>')
    middle = left + (width - left - right) / 2
    parts.append(f'<text x="{middle:.0f}" y="{height - 4}" text-anchor="middle" fill="#555">step</text>')
    parts.append(_legend(left, 14, [(KIND_LABELS[kind], KIND_COLORS[kind]) for kind in STACK]))
    parts.append("</svg>")
    return Markup("".join(parts))


def _legend(x: float, y: float, entries: Sequence[tuple[str, str]]) -> str:
    out = []
    for label, color in entries:
        out.append(f'<rect x="{x:.0f}" y="{y - 9:.0f}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14:.0f}" y="{y:.0f}" fill="#333">{escape(label)}</text>')
        x += 22 + 6.5 * len(label)
    return "".join(out)


def _clip_label(label: str, limit: int = 46) -> str:
    return label if len(label) <= limit else "…" + label[-(limit - 1) :]


def cost_bars(
    rows: Sequence[tuple[str, Sequence[float | None]]],
    *,
    series: Sequence[str] = ("cost",),
    colors: Sequence[str] = ("#4e79a7",),
    title: str = "cost per case (USD, list price)",
    fmt: Callable[[float | None], str] = cost,
    anchors: Sequence[str] | None = None,
) -> Markup:
    """Horizontal bars: one row per label, one bar per series in it (a comparison draws two). None: no price."""
    if not rows:
        return Markup("")
    known = [value for _, values in rows for value in values if value is not None]
    top = nice_ceiling(max(known)) if known and max(known) > 0 else 1.0
    label_width = min(46, max(len(label) for label, _ in rows)) * 6.4 + 12
    bar_area, value_width = 360, 92
    band = 14
    row_height = band * len(series) + 8
    upper = 24 if len(series) > 1 else 8
    width = label_width + bar_area + value_width
    height = upper + row_height * len(rows) + 6
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" {_FONT} font-size="11">',
        f"<title>{escape(title)}</title>",
    ]
    if len(series) > 1:
        parts.append(_legend(label_width, 14, list(zip(series, colors, strict=True))))
    for index, (label, values) in enumerate(rows):
        y0 = upper + index * row_height
        link_open, link_close = "", ""
        if anchors is not None:
            link_open, link_close = f'<a href="#{escape(anchors[index])}">', "</a>"
        parts.append(
            f'{link_open}<text x="{label_width - 8:.0f}" y="{y0 + row_height / 2 + 3:.0f}" text-anchor="end" '
            f'fill="#222"><title>{escape(label)}</title>{escape(_clip_label(label))}</text>{link_close}'
        )
        for position, value in enumerate(values):
            y = y0 + 4 + position * band
            name = series[position]
            if value is None:
                note = f"{escape(name)}: unpriced" if len(series) > 1 else "unpriced"
                parts.append(f'<text x="{label_width + 2:.0f}" y="{y + 10}" fill="#888">{note}</text>')
                continue
            w = max(1.0, bar_area * value / top) if value > 0 else 0.0
            parts.append(
                f'<rect x="{label_width:.0f}" y="{y}" width="{w:.1f}" height="{band - 3}" fill="{colors[position]}">'
                f"<title>{escape(label)} · {escape(name)}: {escape(fmt(value))}</title></rect>"
            )
            parts.append(f'<text x="{label_width + w + 4:.1f}" y="{y + 10}" fill="#333">{escape(fmt(value))}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
