"""The replay part of the HTML report: replay error next to observed error along the op order.

Both are in units of the output dtype's floor (see :mod:`.noise`): the replay error is what the
fusion itself introduces (fused output vs the replay of its original ops from its own inputs);
the observed error is fusion on vs fusion off, drift from upstream included. A fused op that
introduces error stands out on the first; everything after it shows only on the second.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .markup import escape as _esc

WIDTH, HEIGHT, LEFT, TOP = 900, 220, 56, 12
COLOURS = {"replay": "#c0392b", "observed": "#7f8c8d"}
VERDICT_CLASS = {"introduces": "introduces", "unverified": "unknown", "undecided": "propagates"}


def _val(value: Any) -> float | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        return None
    return min(float(value), 1e12)


def _fmt(value: Any) -> str:
    """A score as text: finite ones as they are (a review: 3.2e12 read "inf"), "inf" for the
    largest double summary.json writes for an infinite one."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        return "–"
    return "inf" if value >= 1e308 else f"{value:.3g}"


def _cell(value: Any) -> str:
    """A numeric table cell with its sort key (no value: blank, sorted last, as in the ops
    table; a review found "–" sorted above the worst score)."""
    text = _fmt(value)
    key = "" if text == "–" else ("1e308" if text == "inf" else repr(float(value)))
    return f'<td data-v="{key}">{text}</td>'


def replay_chart(fused: Sequence[Mapping[str, Any]]) -> str:
    """An SVG with two dot series on a log axis (floors), and the tolerance 1 line."""
    points = [(i, r) for i, r in enumerate(fused)]
    values = [
        v for _, r in points for k in ("replay_score", "observed_score")
        if (v := _val(r.get(k))) is not None and v > 0
    ]  # fmt: skip
    if not values:
        return '<p class="empty">No fused op was replayed: nothing to chart.</p>'
    low = math.floor(math.log10(max(min(values), 1e-4)))
    # at least one decade: every score the same power of ten from 10 up left no span
    high = max(math.ceil(math.log10(max(max(values), 10.0))), low + 1)

    def y(v: float) -> float:
        v = max(v, 10.0**low)
        return TOP + (high - math.log10(v)) / (high - low) * (HEIGHT - 2 * TOP)

    def x(i: int) -> float:
        return LEFT + (i + 0.5) / max(1, len(points)) * (WIDTH - LEFT - 10)

    parts = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT + 20}" class="chart" role="img">']
    for e in range(low, high + 1):
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - 10}" y1="{y(10.0**e):.1f}" y2="{y(10.0**e):.1f}" '
            f'stroke="#eee"/><text x="{LEFT - 4}" y="{y(10.0**e) + 4:.1f}" '
            f'text-anchor="end" font-size="10">1e{e}</text>'
        )
    parts.append(
        f'<line x1="{LEFT}" x2="{WIDTH - 10}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" '
        'stroke="#c0392b" stroke-dasharray="4 3"><title>tolerance 1 (dtype floor)</title></line>'
    )
    series = (("observed_score", COLOURS["observed"]), ("replay_score", COLOURS["replay"]))
    for key, colour in series:
        for i, r in points:
            v = _val(r.get(key))
            if v is None:
                continue
            label = "replay" if key == "replay_score" else "observed"
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(max(v, 1e-300)):.1f}" r="2.5" fill="{colour}">'
                f"<title>{_esc(r.get('op'))}: {label} {_fmt(r.get(key))} "
                f"({_esc(r.get('verdict'))})"
                "</title></circle>"
            )
    parts.append(
        f'<text x="{LEFT}" y="{HEIGHT + 14}" font-size="11" fill="{COLOURS["replay"]}">'
        "● replay error (introduced by the fusion)</text>"
        f'<text x="{LEFT + 300}" y="{HEIGHT + 14}" font-size="11" fill="{COLOURS["observed"]}">'
        "● observed error (fusion on vs off)</text></svg>"
    )
    return "".join(parts)


def replay_section(summary: Mapping[str, Any]) -> str:
    replay = summary.get("replay")
    if not isinstance(replay, Mapping):
        return ""
    fused = [r for r in summary.get("fused_ops") or [] if isinstance(r, Mapping)]
    rows = []
    for r in fused:
        rows.append(
            f'<tr class="{_esc(VERDICT_CLASS.get(str(r.get("verdict")), ""))}">'
            f"<td class='num'>{_esc(r.get('order'))}</td><td><code>{_esc(r.get('op'))}</code>"
            f"</td><td>{_esc(r.get('verdict'))}</td><td>{_esc(', '.join(r.get('rules') or []))}"
            f"</td>{_cell(r.get('replay_score'))}{_cell(r.get('observed_score'))}"
            f"{_cell(r.get('tolerance'))}<td>{_esc(r.get('reason', ''))}</td></tr>"
        )
    noise = ", ".join(
        f"{n.get('type')}/{n.get('dtype')} p99 {n.get('p99')} (n={n.get('n')})"
        for n in (summary.get("noise_floor") or [])[:20]
    )
    return "\n".join(
        [
            f"<h2>Replay: error introduced vs observed ({replay.get('replayed')} of "
            f"{replay.get('fused_ops')} fused ops replayed)</h2>",
            "<p class='muted'>In units of the output dtype's floor (fp16 2^-10, bf16 2^-7, "
            "fp32 1e-5); above the tolerance the fused op introduces error.</p>",
            replay_chart(fused),
            f"<p class='muted'>noise floor (fusion-off ops against their own dumps): "
            f"{_esc(noise or 'not measured')}</p>",
            '<table class="sortable"><thead><tr><th>#</th><th>fused op</th><th>verdict</th>'
            '<th>rules</th><th data-first="desc">replay error</th>'
            '<th data-first="desc">observed error</th><th>tolerance</th><th>reason</th></tr>'
            "</thead><tbody>",
            "\n".join(rows),
            "</tbody></table>",
        ]
    )
