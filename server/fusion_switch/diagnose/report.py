"""``report.html``: one self-contained page (inline CSS, SVG and a few lines of JS, no URLs).

Built from the summary dict alone (:mod:`.summary`), so it can be regenerated from
``summary.json``. Two charts share the execution-order axis: the worst output cosine similarity
of each fusion-on op, and its relative Euclidean distance on a log scale (a dropped scale factor
shows only there). Suspect ops are marked on both and labelled with their rule. The table below
sorts by any column when its header is clicked (works without JS too, just unsorted).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..catalogue.rules import CANNOT_SWITCH_OFF
from .exit_status import exit_status
from .markup import escape as _esc
from .report_replay import replay_section

WIDTH, PANEL_H, LEFT, RIGHT, TOP = 1100, 200, 64, 16, 28
INFINITE = 1e308  # summary.json writes +-inf as +-DBL_MAX
DOTS_UP_TO = 600  # above this many ops the chart shows a verdict strip instead of a dot per op
LABEL_CHARS = 44  # suspect labels longer than this are cut (the full name is in the tooltip)
VERDICT_COLOURS = {
    "introduces": "#c62828",
    "amplifies": "#ef6c00",
    "propagates": "#9e9e9e",
    "clean": "#2e7d32",
    "unknown": "#bdbdbd",
}


def _num(value: Any) -> float | None:
    """A summary number as a float; None for no value. Infinite values are written to JSON as
    the largest double (strict JSON has no infinity); older summaries wrote "inf"/"NaN"."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = {"inf": math.inf, "-inf": -math.inf}.get(value, math.nan)
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(out):
        return None
    return math.copysign(math.inf, out) if abs(out) >= INFINITE else out


def _fmt(value: Any) -> str:
    v = _num(value)
    if v is None:
        return "NaN" if value == "NaN" else ""
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-4):
        return f"{v:.3e}"
    return f"{v:.6f}"


def _x(i: int, n: int) -> float:
    span = WIDTH - LEFT - RIGHT
    return LEFT + (span * i / max(n - 1, 1))


def _panel(
    ops: Sequence[Mapping[str, Any]],
    key: str,
    title: str,
    y_of: Any,
    ticks: Sequence[tuple[float, str]],
    top: float,
    marks: Mapping[int, str],
) -> list[str]:
    """One panel: frame, grid, the series as a line, and a dot per op (with a tooltip) coloured
    by verdict. Above DOTS_UP_TO ops only the suspects and the ops that add error get a dot,
    which keeps a 5,000-op report small; the verdict strip below the chart shows the rest."""
    n = len(ops)
    every_dot = n <= DOTS_UP_TO
    parts = [
        f'<text x="{LEFT}" y="{top - 8:.1f}" class="ptitle">{_esc(title)}</text>',
        f'<rect x="{LEFT}" y="{top}" width="{WIDTH - LEFT - RIGHT}" height="{PANEL_H}" '
        'class="frame"/>',
    ]
    for value, label in ticks:
        y = y_of(value)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
        )
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="tick">{_esc(label)}</text>')
    points = []
    dots = []
    for i, op in enumerate(ops):
        v = _num(op.get(key))
        if v is None:
            continue
        x, y = _x(i, n), y_of(v)
        points.append(f"{x:.1f},{y:.1f}")
        verdict = str(op.get("verdict"))
        if not (every_dot or i in marks or verdict in ("introduces", "amplifies")):
            continue
        colour = VERDICT_COLOURS.get(verdict, "#888")
        tip = f"#{op.get('order')} {op.get('op')} ({op.get('type')}) {key}={_fmt(op.get(key))}"
        r = 4.5 if i in marks else 2.2
        dots.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{colour}"><title>{_esc(tip)}</title>'
            "</circle>"
        )
    if points:
        parts.append(f'<polyline points="{" ".join(points)}" class="series"/>')
    for i in marks:
        x = _x(i, n)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + PANEL_H}" class="mark"/>'
        )
    parts.extend(dots)
    return parts


def _verdict_strip(ops: Sequence[Mapping[str, Any]], top: float) -> list[str]:
    """A thin band under the chart coloured by each op's verdict, one rectangle per run of
    equal verdicts, so that its size grows with the number of changes, not of ops."""
    n = len(ops)
    half = (WIDTH - LEFT - RIGHT) / max(n - 1, 1) / 2
    parts = []
    start = 0
    for i in range(1, n + 1):
        if i < n and ops[i].get("verdict") == ops[start].get("verdict"):
            continue
        verdict = str(ops[start].get("verdict"))
        x0 = max(LEFT, _x(start, n) - half)
        x1 = min(WIDTH - RIGHT, _x(i - 1, n) + half)
        parts.append(
            f'<rect x="{x0:.1f}" y="{top}" width="{max(x1 - x0, 1):.1f}" height="6" '
            f'fill="{VERDICT_COLOURS.get(verdict, "#888")}"><title>{_esc(verdict)}: '
            f"#{_esc(ops[start].get('order'))}..#{_esc(ops[i - 1].get('order'))}</title></rect>"
        )
        start = i
    return parts


def _x_ticks(ops: Sequence[Mapping[str, Any]], y: float) -> list[str]:
    """About ten ticks under the chart, labelled with the op's index in the graph (``order``)."""
    n = len(ops)
    count = min(n, 10)
    picks = sorted({round(k * (n - 1) / max(count - 1, 1)) for k in range(count)})
    parts = []
    for i in picks:
        x = _x(i, n)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 4}" y2="{y}" class="xtick"/>'
            f'<text x="{x:.1f}" y="{y + 12}" class="xlabel">{_esc(ops[i].get("order"))}</text>'
        )
    return parts


def _legend(y: float) -> list[str]:
    parts = []
    x = float(LEFT)
    for verdict, colour in VERDICT_COLOURS.items():
        parts.append(
            f'<circle cx="{x + 4:.1f}" cy="{y - 4}" r="4" fill="{colour}" class="key"/>'
            f'<text x="{x + 12:.1f}" y="{y}" class="legend">{verdict}</text>'
        )
        x += 12 + 7.2 * len(verdict) + 18
    return parts


def _label_width(label: str) -> float:
    return 6.8 * len(label) + 8


def _anchor(x: float, label: str) -> str:
    """Labels run right of their mark unless they would leave the chart."""
    return "start" if x + _label_width(label) <= WIDTH - RIGHT else "end"


def _label_rows(marks: Mapping[int, str], n: int) -> dict[int, int]:
    """A text row for each suspect label so that neighbouring labels do not overlap."""
    row_ends: list[float] = []
    rows: dict[int, int] = {}
    for i in sorted(marks):
        x = _x(i, n)
        width = _label_width(marks[i])
        start, end = (x, x + width) if _anchor(x, marks[i]) == "start" else (x - width, x)
        for r, last in enumerate(row_ends):
            if start > last:
                row_ends[r] = end
                rows[i] = r
                break
        else:
            rows[i] = len(row_ends)
            row_ends.append(end)
    return rows


def _limit(thresholds: Mapping[str, Any] | None, name: str) -> float | None:
    entry = (thresholds or {}).get(name)
    return _num(entry.get("limit")) if isinstance(entry, Mapping) else None


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _cosine_ticks(low: float) -> list[tuple[float, str]]:
    """Round tick values (steps of 0.02 ... 0.5) from ``low`` to 1, at most six."""
    span = 1.0 - low
    step = next(s for s in (0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0) if span / s <= 5.0 + 1e-9)
    first = math.ceil(round(low / step, 6))
    last = math.floor(round(1.0 / step, 6))
    return [(k * step, f"{k * step:.2f}") for k in range(first, last + 1)]


def chart_svg(
    ops: Sequence[Mapping[str, Any]],
    suspects: Sequence[Mapping[str, Any]],
    thresholds: Mapping[str, Any] | None = None,
) -> str:
    """Two panels (cosine, relative Euclidean distance) along execution order, suspects marked
    and labelled ``#rank rule``, the thresholds drawn as dotted lines, x ticks labelled with
    the op's index in the graph, a verdict strip and a colour legend."""
    ops = [
        op for op in ops if _num(op.get("cosine")) is not None or _num(op.get("red")) is not None
    ]
    if not ops:
        return '<p class="empty">No output tensor could be compared: nothing to chart.</p>'
    position = {op["op"]: i for i, op in enumerate(ops)}
    rules_at: dict[int, list[tuple[int, str]]] = {}
    for rank, s in enumerate(suspects, 1):
        for name in s.get("ops", []):
            if name in position:
                rules_at.setdefault(position[name], []).append((rank, str(s.get("rule", "?"))))
    marks: dict[int, str] = {}
    tips: dict[int, str] = {}
    for i, found in rules_at.items():
        rank, rule = found[0]
        more = f" (+{len(found) - 1})" if len(found) > 1 else ""
        marks[i] = f"#{rank} {_short(rule)}{more}"
        tips[i] = f"{ops[i]['op']}: " + ", ".join(f"#{r} {name}" for r, name in found)
    rows = _label_rows(marks, len(ops))
    n_rows = max(rows.values(), default=-1) + 1
    cosines = [v for op in ops if (v := _num(op.get("cosine"))) is not None and math.isfinite(v)]
    cos_limit = _limit(thresholds, "CosineSimilarity")
    low = min([*cosines, 0.9, *([cos_limit] if cos_limit is not None else [])])
    low = math.floor(low * 10) / 10 if low > -1 else -1.0
    top1 = TOP + 20 + 15 * max(n_rows - 1, 0)

    def y_cos(v: float) -> float:
        return top1 + PANEL_H * (1.0 - (min(max(v, low), 1.0) - low) / (1.0 - low or 1.0))

    red_limit = _limit(thresholds, "RelativeEuclideanDistance")
    reds = [
        v for op in ops if (v := _num(op.get("red"))) is not None and v > 0 and math.isfinite(v)
    ]
    if red_limit and red_limit > 0 and math.isfinite(red_limit):
        reds.append(red_limit)
    lo_exp = math.floor(math.log10(min(reds))) if reds else -6
    hi_exp = math.ceil(math.log10(max(reds))) if reds else 0
    lo_exp = min(max(lo_exp, -9), 8)  # the panel spans at most 1e-9 .. 1e9
    hi_exp = max(min(hi_exp, 9), lo_exp + 1)
    top2 = top1 + PANEL_H + 48

    def y_red(v: float) -> float:
        if v <= 0:
            e = lo_exp
        elif math.isinf(v):
            e = hi_exp
        else:
            e = min(max(math.log10(v), lo_exp), hi_exp)
        return top2 + PANEL_H * (1.0 - (e - lo_exp) / (hi_exp - lo_exp))

    step = max(1, (hi_exp - lo_exp) // 6)
    red_ticks = [(10.0**e, f"1e{e}") for e in range(lo_exp, hi_exp + 1, step)]
    # the floor also holds zeros and everything smaller
    red_ticks[0] = (red_ticks[0][0], f"\u2264{red_ticks[0][1]}")
    strip_y = top2 + PANEL_H + 4
    height = strip_y + 58
    parts = [
        f'<svg viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" role="img" aria-label="similarity along execution order">'
    ]
    cos_band = f"; in band above {_fmt_short(cos_limit)}" if cos_limit is not None else ""
    red_band = f"; in band below {_fmt_short(red_limit)}" if red_limit is not None else ""
    cos_title = f"CosineSimilarity (worst output{cos_band})"
    parts += _panel(ops, "cosine", cos_title, y_cos, _cosine_ticks(low), top1, marks)
    parts += _panel(
        ops,
        "red",
        f"RelativeEuclideanDistance (worst output, log scale{red_band})",
        y_red,
        red_ticks,
        top2,
        marks,
    )
    for limit, y_of, name in ((cos_limit, y_cos, "cos"), (red_limit, y_red, "red")):
        if limit is None:
            continue
        y = y_of(limit)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="band">'
            f"<title>{name} threshold {_esc(_fmt_short(limit))}</title></line>"
        )
    for i, label in marks.items():
        x = _x(i, len(ops))
        y = TOP + 10 + 15 * rows[i]
        anchor = _anchor(x, label)
        dx = -4 if anchor == "end" else 4
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y + 3}" y2="{top1}" class="mark"/>'
            f'<text x="{x + dx:.1f}" y="{y}" text-anchor="{anchor}" class="label">'
            f"{_esc(label)}<title>{_esc(tips[i])}</title></text>"
        )
    parts += _verdict_strip(ops, strip_y)
    parts += _x_ticks(ops, strip_y + 14)
    parts += _legend(height - 6)
    parts.append(
        f'<text x="{WIDTH - RIGHT}" y="{height - 6}" class="axis">fusion-on ops in execution '
        f"order: op index in the graph ({len(ops)} ops with a compared output)</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts)


def _fmt_score(value: Any) -> str:
    v = _num(value)
    return "?" if v is None else f"{v:.3f}"


def _fmt_short(value: float) -> str:
    """A threshold as the user gave it (``:g`` showed a limit of 0.9999999 as 1)."""
    return f"{value:.15g}"


CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
.verdict{font-size:16px;padding:8px 12px;background:#fff3e0;border-left:4px solid #ef6c00}
.ok{background:#e8f5e9;border-color:#2e7d32}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{border-bottom:1px solid #e0e0e0;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#fafafa;position:sticky;top:0;cursor:pointer;user-select:none}
th.sorted-asc::after{content:" \\25B2"} th.sorted-desc::after{content:" \\25BC"}
td.num,td[data-v]{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.introduces td{background:#ffebee} tr.amplifies td{background:#fff3e0}
.suspect{border:1px solid #e0e0e0;border-radius:6px;padding:8px 12px;margin:8px 0}
.suspect .rule{font-weight:600;font-size:15px} .muted{color:#757575}
code{font-family:ui-monospace,Consolas,monospace;font-size:12px}
svg .frame{fill:none;stroke:#bdbdbd} svg .grid{stroke:#eeeeee}
svg .series{fill:none;stroke:#1565c0;stroke-width:1}
svg .mark{stroke:#c62828;stroke-dasharray:4 3}
svg .band{stroke:#ef6c00;stroke-dasharray:1 3}
svg .tick{font-size:11px;text-anchor:end;fill:#616161} svg .ptitle{font-size:12px;fill:#424242}
svg .label{font-size:12px;fill:#c62828;font-weight:600}
svg .axis{font-size:12px;fill:#616161;text-anchor:end} svg .legend{font-size:11px;fill:#424242}
svg .xtick{stroke:#9e9e9e} svg .xlabel{font-size:11px;fill:#616161;text-anchor:middle}
td,.suspect code,dd code{overflow-wrap:anywhere} td[data-v],td.num{overflow-wrap:normal}
table.sortable td:nth-child(2){min-width:16em} table.sortable td:nth-child(5){min-width:12em}
table.sortable td:nth-child(3),table.sortable td:nth-child(4){overflow-wrap:normal}
th{white-space:nowrap}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0} dt{color:#757575}
"""

SORT_JS = """
function sortKey(cell){
  var v = cell.getAttribute('data-v');
  return (v === null ? cell.textContent : v).trim();
}
document.querySelectorAll('table.sortable').forEach(function(table){
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function(th, col){
    th.addEventListener('click', function(){
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var asc = th.classList.contains('sorted-asc') ? false
        : th.classList.contains('sorted-desc') ? true
        : th.getAttribute('data-first') !== 'desc';
      Array.prototype.forEach.call(heads, function(h){
        h.classList.remove('sorted-asc', 'sorted-desc');
      });
      th.classList.add(asc ? 'sorted-asc' : 'sorted-desc');
      rows.sort(function(a, b){
        var x = sortKey(a.cells[col]), y = sortKey(b.cells[col]);
        if (x === '' || y === '') return (x === '') - (y === '');  /* blanks always last */
        var nx = Number(x), ny = Number(y), r;
        if (!isNaN(nx) && !isNaN(ny)) r = nx - ny;
        else if (!isNaN(nx)) r = -1; else if (!isNaN(ny)) r = 1;
        else r = x.localeCompare(y);
        return asc ? r : -r;
      });
      var frag = document.createDocumentFragment();
      rows.forEach(function(r){ frag.appendChild(r); });
      body.appendChild(frag);
    });
  });
});
"""


def _num_cell(value: Any) -> str:
    if type(value) is float and -INFINITE < value < INFINITE:  # the usual case, NaN excluded
        # what the general path below gives: its text is only digits, signs, "." and "e"
        text = f"{value:.3e}" if value != 0 and not 1e-4 <= abs(value) < 1e5 else _six(value)
        return f'<td data-v="{value!r}">{text}</td>'
    v = _num(value)
    data = (
        ""
        if v is None
        else ("1e308" if v == math.inf else ("-1e308" if v == -math.inf else repr(v)))
    )
    return f'<td data-v="{data}">{_esc(_fmt(value))}</td>'


_NUMBER_KEYS = ("cosine", "red", "kl", "rmse", "mre", "input_badness", "badness")
_NO_NUMBER = '<td data-v=""></td>'  # _num_cell(None)


def _six(value: float) -> str:
    """Six decimals, or as many as tell a value from 1 (a cosine of 0.9999996 read 1.000000
    beside a limit of 0.9999999: a review)."""
    text = f"{value:.6f}"
    return f"{value:.12g}" if text == "1.000000" and value != 1.0 else text


def _table_rows(ops: Sequence[Mapping[str, Any]]) -> list[str]:
    """The table's row per op. Issue 16: 5,000 ops are 35,000 number cells, so the usual
    cell (a finite float, or None) is written here, and :func:`_num_cell` does the rest."""
    rows = []
    escaped: dict[str, str] = {}  # verdicts, types and rule lists repeat
    for op in ops:
        verdict, op_type = op.get("verdict"), op.get("type")
        rules = ", ".join(op.get("rules", []))
        order = op.get("order")
        cells = []
        for key in _NUMBER_KEYS:
            value = op.get(key)
            if value is None:
                cells.append(_NO_NUMBER)
            elif type(value) is float and -INFINITE < value < INFINITE:  # _num_cell, inlined
                if value != 0 and not 1e-4 <= abs(value) < 1e5:
                    cells.append(f'<td data-v="{value!r}">{value:.3e}</td>')
                else:
                    cells.append(f'<td data-v="{value!r}">{_six(value)}</td>')
            else:
                cells.append(_num_cell(value))
        rows.append(
            f'<tr class="{_esc(op.get("verdict", ""))}"><td class="num">'
            f"{order if type(order) is int else _esc(order)}</td>"
            f"<td><code>{_esc(op.get('op'))}</code></td>"
            f"<td>{_cached_esc(op_type, escaped)}</td><td>{_cached_esc(verdict, escaped)}</td>"
            f"<td>{_cached_esc(rules, escaped)}</td>{''.join(cells)}</tr>"
        )
    return rows


def _cached_esc(value: Any, cache: dict[str, str]) -> str:
    if type(value) is not str:
        return _esc(value)
    text = cache.get(value)
    if text is None:
        text = cache[value] = _esc(value)
    return text


def _suspect_block(rank: int, s: Mapping[str, Any]) -> str:
    ev_lines = []
    for f in s.get("evidence", [])[:5]:
        outs = "; ".join(c for o in f.get("outputs", []) for c in o.get("crossed", [])) or "—"
        ins = ", ".join(
            f"{i.get('tensor')}{' via ' + i['via'] if i.get('via') else ''}: badness "
            f"{_fmt(i.get('badness'))}"
            for i in f.get("inputs", [])
        )
        badness = [_num(i.get("badness")) for i in f.get("inputs", [])]
        out_of_band = any(b is not None and b > 1 for b in badness)  # the op amplifies them
        ev_lines.append(
            f"<li><code>{_esc(f.get('op'))}</code> ({_esc(f.get('type', ''))}, "
            f"{_esc(f.get('verdict'))})"
            f"<br>outputs: {_esc(outs)}<br><span class='muted'>inputs "
            f"{'already out of band' if out_of_band else 'in band'}: "
            f"{_esc(ins or 'none compared')}</span></li>"
        )
    co = ", ".join(s.get("co_rules", [])) or "none"
    blamed, judged = len(s.get("ops", [])), s.get("judged_ops", "?")
    label = "heuristic, not proven by replay: " if s.get("verdict") == "heuristic" else ""
    return (
        f'<div class="suspect"><div class="rule">{rank}. {_esc(s.get("rule", "?"))} '
        f'<span class="muted">({_esc(s.get("section", "?"))}, score {_fmt_score(s.get("score"))}: '
        f"{label}introduces error in {blamed} of its {_esc(judged)} compared fused op"
        f"{'' if judged == 1 else 's'})</span></div>"
        + (f"<p class='muted'>{FORBIDDEN_HTML}</p>" if s.get("cannot_switch_off") else "")
        + f"<div class='muted'>original ops: {_esc(', '.join(s.get('original_ops', [])[:12]))}"
        f" · other rules on these ops: {_esc(co)}</div><ul>{''.join(ev_lines)}</ul></div>"
    )


FORBIDDEN_HTML = _esc(CANNOT_SWITCH_OFF[:1].upper() + CANNOT_SWITCH_OFF[1:] + ".")
NOT_PROVEN = {
    "heuristic": "heuristic guess: the rows blame it, the replay could not verify its op",
    "undecided": "its fused op is proven wrong, but not which of its passes",
    "unverified": "the replay could not verify its op; nothing blames it",
}


def _not_proven_block(summary: Mapping[str, Any]) -> str:
    """The rules the replay neither proved nor cleared, labelled (a review: the page said
    "No fused op introduces error" in a green box beside an op it proved wrong)."""
    rules = [
        r
        for r in summary.get("unverified_rules") or []
        if isinstance(r, Mapping) and r.get("verdict") in NOT_PROVEN
    ]
    if not rules:
        return ""
    items = "".join(
        f"<li><b>{_esc(r.get('rule'))}</b> ({_esc(r.get('section'))}): "
        f"{_esc(r.get('verdict'))}, {_esc(NOT_PROVEN[r['verdict']])}; ops "
        f"{_esc(', '.join(str(o) for o in (r.get('ops') or [])[:6]) or '?')}"
        + (f"<br><span class='muted'>{_esc(r['reasons'][0])}</span>" if r.get("reasons") else "")
        + (f"<br><span class='muted'>{FORBIDDEN_HTML}</span>" if r.get("cannot_switch_off") else "")
        + "</li>"
        for r in rules
    )
    return f"<h2>Not proven ({len(rules)})</h2><ul>{items}</ul>"


def _without_rule_block(summary: Mapping[str, Any]) -> str:
    """Fused ops blamed whose graph names no fusion rule (a review: the page said "No fused
    op introduces error" in a green box beside one the replay proved wrong)."""
    found = [f for f in summary.get("fused_ops_without_rule") or [] if isinstance(f, Mapping)]
    if not found:
        return ""
    items = "".join(
        f"<li><code>{_esc(f.get('op'))}</code> ({_esc(f.get('type'))}): "
        + ("proven wrong by replay" if f.get("verdict") == "introduces" else "heuristic guess")
        + f"; original ops {_esc(', '.join(str(o) for o in (f.get('original_ops') or [])[:6]))}"
        + "</li>"
        for f in found
    )
    return (
        f"<h2>Fused ops introducing error, rule unknown ({len(found)})</h2>"
        "<p class='muted'>The graph names no fusion rule for these ops: give the build's "
        "fusion_result.json (--fusion-result) or bisect to name it.</p>"
        f"<ul>{items}</ul>"
    )


def _all_clear(summary: Mapping[str, Any]) -> bool:
    """Green only when the run exits 0 (no suspect, no guess, nothing undecided, no evidence
    a clean verdict needs missing): a review found it green beside an op proven wrong. Rules
    merely unverified in a run whose outputs all agree are still listed, not alarmed."""
    return exit_status(summary) == 0


def _downstream_block(rules: Sequence[Mapping[str, Any]]) -> str:
    if not rules:
        return ""
    names = ", ".join(str(r.get("rule")) for r in rules)
    return (
        f"<h2>Not judged: only downstream of the error ({len(rules)})</h2>"
        "<p class='muted'>Every op of these rules already had inputs out of band, so whether "
        f"they are harmless cannot be told from this run: {_esc(names)}</p>"
    )


def render_report(summary: Mapping[str, Any], title: str = "fusion-switch comparison") -> str:
    """The complete HTML page for a summary dict."""
    suspects = summary.get("suspects", [])
    ops = summary.get("ops", [])
    ok = _all_clear(summary)
    rows = _table_rows(ops)
    inputs = summary.get("inputs", {})
    input_items = "".join(
        f"<dt>{_esc(k)}</dt><dd><code>{_esc(v)}</code></dd>"
        for k, v in inputs.items()
        if k != "notes" and v
    )
    notes = [*inputs.get("notes", []), *summary.get("notes", [])]
    thresholds = ", ".join(
        f"{k} {v.get('in_band', '')} {v.get('limit')}"
        for k, v in (summary.get("thresholds") or {}).items()
        if isinstance(v, Mapping)
    )
    harmless = summary.get("harmless_rules", [])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        f"<p class='muted'>{_esc(summary.get('tool', ''))} · target "
        f"{_esc(summary.get('soc_version') or 'unknown')} · thresholds: {_esc(thresholds)}</p>",
        f'<p class="verdict{" ok" if ok else ""}">{_esc(summary.get("verdict", ""))}</p>',
        "<h2>Similarity along execution order</h2>",
        chart_svg(ops, suspects, summary.get("thresholds")),
        replay_section(summary),
        f"<h2>Suspect rules ({len(suspects)})</h2>",
        "".join(_suspect_block(i + 1, s) for i, s in enumerate(suspects))
        or ("<p>No fused op introduces error.</p>" if ok else "<p>No rule proven by replay.</p>"),
        _without_rule_block(summary),
        _not_proven_block(summary),
        f"<h2>Harmless rules ({len(harmless)})</h2><p class='muted'>"
        + (_esc(", ".join(str(h.get("rule")) for h in harmless)) or "none")
        + "</p>",
        _downstream_block(summary.get("downstream_only_rules") or []),
        f"<h2>All ops ({len(ops)})</h2>",
        '<p class="muted">Click a header to sort (the metric columns sort worst first); '
        "badness is how far a tensor is out of band (over 1: out of band).</p>",
        '<table class="sortable"><thead><tr><th title="op index in the graph">#</th><th>op</th>'
        "<th>type</th><th>verdict</th><th>rules (most recent first)</th>"
        '<th title="CosineSimilarity of the worst output">cosine</th>'
        '<th data-first="desc" title="RelativeEuclideanDistance">RED</th>'
        '<th data-first="desc" title="KullbackLeiblerDivergence">KL</th>'
        '<th data-first="desc" title="RootMeanSquareError">RMSE</th>'
        '<th data-first="desc" title="MeanRelativeError">MRE</th>'
        '<th data-first="desc">input badness</th><th data-first="desc">output badness</th>'
        "</tr></thead><tbody>",
        "\n".join(rows),
        "</tbody></table>",
        "<h2>Inputs</h2><dl>",
        input_items,
        f"<dt>csv</dt><dd><code>{_esc(summary.get('csv') or '')}</code></dd></dl>",
        (f"<h2>Notes ({len(notes)})</h2><ul>" + "".join(f"<li>{_esc(n)}</li>" for n in notes))
        + "</ul>"
        if notes
        else "",
        f"<script>{SORT_JS}</script></body></html>",
    ]
    return "\n".join(parts)
