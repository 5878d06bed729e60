"""The verdict as ``compare`` and ``demo`` print it: the notes worth a line, the top suspects
with their section, op and evidence (or the replay's table), and where the outputs are."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

MAX_SHOWN = 5

BAD_FILE_PREFIX = "skipped a bad dump file"  # diagnose.summary.BAD_FILE_NOTE
DUMP_SIDES = ("fusion-on dumps:", "fusion-off dumps:")


def condensed_notes(notes: list[str], limit: int = 6) -> tuple[list[str], int]:
    """The notes worth a line, and how many more were left out for the limit.

    Grouped in a stable order: general notes (the inputs were swapped, the graph does not
    match...), then where each side's dump files are (only the last of a side's dump-folder
    notes: where the files were found), then the bad dump files skipped. Pairing details stay
    in the summary and are not counted as left out."""
    general: list[str] = []
    per_side: dict[str, str] = {}
    bad_files: list[str] = []
    for note in map(str, notes):
        if note.startswith("pairing:"):
            continue
        side = next((p for p in DUMP_SIDES if note.startswith(p)), "")
        if side:
            per_side[side] = note
        elif note.startswith(BAD_FILE_PREFIX):
            bad_files.append(note)
        else:
            general.append(note)
    ordered = [*general, *(per_side[s] for s in DUMP_SIDES if s in per_side), *bad_files]
    return ordered[:limit], max(0, len(ordered) - limit)


def print_verdict(summary: dict, stream: TextIO) -> None:
    """The human-readable verdict: top suspects with section, op, evidence; then the paths."""
    counts = summary.get("counts", {})
    w = stream.write
    w(
        f"compared {counts.get('compared', '?')} of {counts.get('rows', '?')} tensors in "
        f"{counts.get('ops', '?')} fusion-on ops"
        + (f" (target {summary['soc_version']})" if summary.get("soc_version") else "")
        + "\n"
    )
    shown, dropped = condensed_notes(summary.get("inputs", {}).get("notes", []))
    for note in shown:
        w(f"note: {note}\n")
    if dropped:
        w(f"note: ... {dropped} more in summary.json\n")
    w(f"\nverdict: {summary['verdict']}\n")
    suspects = summary.get("suspects", [])
    if summary.get("replay") is not None:
        _print_replay(summary, w)
        _print_footer(summary, w)
        return
    for rank, s in enumerate(suspects[:MAX_SHOWN], 1):
        w(f"\n  {rank}. {s['rule']}  [{s['section']}]  score {s['score']:.3f}\n")
        for ev in s.get("evidence", [])[:2]:
            originals = ", ".join(ev.get("original_ops", [])[:6])
            w(f"     op {ev['op']} ({ev.get('type', '')}) <- {originals}\n")
            crossed = [c for out in ev.get("outputs", []) for c in out.get("crossed", [])]
            w(f"     output out of band: {'; '.join(crossed[:3]) or '?'}\n")
            worst_in = max(
                (i["badness"] for i in ev.get("inputs", []) if isinstance(i.get("badness"), float)),
                default=None,
            )
            if worst_in is None:
                w("     inputs: none compared\n")
            elif worst_in <= 1:
                w(f"     inputs agree with fusion off (worst badness {worst_in:.3g} <= 1)\n")
            else:  # the op amplifies what its inputs bring
                w(
                    "     inputs already differ from fusion off "
                    f"(worst badness {_score(worst_in)} > 1)\n"
                )
        if s.get("co_rules"):
            w(f"     same ops also built by: {', '.join(s['co_rules'])}\n")
    if len(suspects) > MAX_SHOWN:
        w(f"\n  ... {len(suspects) - MAX_SHOWN} more in the summary\n")
    harmless = summary.get("harmless_rules", [])
    if harmless:
        names = ", ".join(h["rule"] for h in harmless[:8])
        more = f" and {len(harmless) - 8} more" if len(harmless) > 8 else ""
        w(f"\nharmless rules ({len(harmless)}): {names}{more}\n")
    if suspects:
        w(_switch_off_advice(suspects[0]))
    _print_footer(summary, w)


def _switch_off_advice(top: dict) -> str:
    """How to switch the top suspect off, or why it cannot be (CANN's forbidden-close list)."""
    if top.get("cannot_switch_off"):
        from ..catalogue.rules import CANNOT_SWITCH_OFF

        return (
            f"\n{top['rule']} ({top['section']}) {CANNOT_SWITCH_OFF}; report the fused op and "
            "this summary to your CANN support\n"
        )
    guess = (
        " (a heuristic guess, not proven by replay)" if top.get("verdict") == "heuristic" else ""
    )
    return (
        f'\nto switch it off{guess}, add to fusion_switch.cfg under "{top["section"]}": '
        f'"{top["rule"]}": "off"\n' + assumed_section_note(top)
    )


def assumed_section_note(entry: dict) -> str:
    from ..workflow.verdicts import assumed_section

    said = assumed_section(entry)
    return f"  ({said}; compare again with --fusion-result FILE to be sure)\n" if said else ""


def _print_footer(summary: dict, w) -> None:
    summary_path = Path(summary["report"]).parent / "summary.json"
    w(f"\nreport:  {summary.get('report')}\nsummary: {summary_path}\n")
    w(f"csv:     {summary.get('csv')}\n")


def _score(value) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    return "inf" if value >= 1e300 else f"{value:.3g}"


def _print_replay(summary: dict, w) -> None:
    """The replay table: proven rules, then undecided/unverified/heuristic ones, labelled."""
    replay = summary["replay"]
    w(
        f"replay: {replay['replayed']} of {replay['fused_ops']} fused ops replayed "
        f"({100 * replay['coverage']:.1f}%) in {replay['seconds']:.2f} s\n"
    )
    by_op = {r["op"]: r for r in summary.get("fused_ops", [])}
    suspects = summary.get("suspects", [])
    if suspects:
        w("\n  rule                                     verdict      fused op (replay/tolerance)\n")
    for s in suspects[:MAX_SHOWN]:
        op = s["ops"][0]
        r = by_op.get(op, {})
        ratio = _score(r.get("replay_score"))
        w(
            f"  {s['rule']:<40} introduces   {op} ({ratio} / {_score(r.get('tolerance'))}; "
            f"observed {_score(r.get('observed_score'))})\n"
        )
        originals = ", ".join((r.get("original_ops") or s.get("original_ops") or [])[:6])
        w(f"{'':57}op {op} ({r.get('type', '')}) <- {originals}\n")
        crossed = [
            c for ev in s.get("evidence", [])[:1] for o in ev.get("outputs", [])
            for c in o.get("crossed", [])
        ]  # fmt: skip
        if crossed:
            w(f"{'':57}fusion on vs off: {'; '.join(crossed[:3])}\n")
        loc = r.get("localisation") or {}
        for item in (loc.get("explained_by") or [])[:1]:
            w(f"{'':57}localised: {item['original_op']} {item['variant']}\n")
        if loc.get("innocent"):
            w(f"{'':57}not guilty on this op: {', '.join(loc['innocent'])}\n")
    if len(suspects) > MAX_SHOWN:
        w(f"\n  ... {len(suspects) - MAX_SHOWN} more in the summary\n")
    others = summary.get("unverified_rules", [])
    for v in others[:MAX_SHOWN]:
        reason = (v.get("reasons") or [""])[0]
        label = v["verdict"] + (" (not proven)" if v["verdict"] != "unverified" else "")
        w(f"  {v['rule']:<40} {label}  {', '.join(v.get('ops', [])[:2])}\n")
        if reason:
            w(f"{'':45}{reason}\n")
    if len(others) > MAX_SHOWN:
        w(f"  ... {len(others) - MAX_SHOWN} more unverified/undecided rules in the summary\n")
    for missing in summary.get("evidence_missing", [])[:3]:
        w(f"evidence missing: {missing}\n")
    if suspects:
        w(_switch_off_advice(suspects[0]))
