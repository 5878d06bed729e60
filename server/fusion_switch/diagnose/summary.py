"""``summary.json``: the verdict of a comparison, per rule and per op, for people and tools.

Shape (suspects most likely first)::

    {"suspects": [{"rule", "section", "ops", "original_ops", "evidence", "score", ...}],
     "harmless_rules": [...], "downstream_only_rules": [...], "unattributed_ops": [...],
     "fused_ops_without_rule": [{"op", "verdict", "original_ops", ...}],
     "ops": [{"op", "type", "order", "verdict", "rules", "cosine", "red", "badness"}],
     "inputs": {...paths used, "notes": [...]}, "counts": {...}, "soc_version": ...,
     "csv": path, "report": path, "thresholds": {...}}

For scripts: key names are stable (``format`` is bumped when they change); every metric,
badness and score is a JSON number or ``null`` (no value, or NaN), never a string, and an
infinite value is written as the largest double (+-1.7976931348623157e308), because strict JSON
has no infinity; every path is absolute.

Files are written atomically (temporary file + rename): an interrupted run never leaves a
half-written summary or report behind.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..compare.result_csv import hold_lock
from ..readers.collector import collector_paused, leave_to_exit
from ..readers.signals_held import signals_deferred, signals_held

with signals_held():  # msgspec crashed when Ctrl-C landed in its import (readers.signals_held)
    import msgspec
from .attribution import (
    Attribution,
    OpFinding,
    apply_replay,
    attribute,
    find_fusion_result,
    json_number,
    load_fusion_result,
)
from .exit_status import DIVERGING, NOTHING_COMPARED
from .thresholds import RowIndex, Threshold

SUMMARY_FORMAT = 2  # 2: replay verdicts (fused_ops, rules, noise_floor, replay, evidence_missing)
SUMMARY_NAME = "summary.json"
REPORT_NAME = "report.html"


def write_text_atomic(path: str | os.PathLike, text: str | bytes) -> Path:
    """Write ``text`` (UTF-8 bytes as they are) to ``path`` through a temporary file in the same
    folder and a rename. What UTF-8 cannot hold, a lone surrogate (a file name with a byte that
    is not UTF-8, as Python reads it), is written as its escape, ``\\udce9``."""
    (path,) = write_together([(path, text)])
    return path


def write_together(files: Sequence[tuple[str | os.PathLike, str | bytes]]) -> list[Path]:
    """Write each ``(path, text)`` as :func:`write_text_atomic` does, all of them or none: every
    text goes to its temporary file first, then the renames follow one another, in order, with
    Ctrl-C and SIGTERM deferred until the last is done. An interrupt between two of them left
    this run's report.html beside an earlier run's summary.json (a kill stress, issue 16)."""
    aside: list[tuple[Path, Path]] = []
    handles: list = []  # each temporary file locked while it has its temporary name
    try:
        for path, text in files:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
            data = text if isinstance(text, bytes) else text.encode("utf-8", "backslashreplace")
            handle = open(tmp, "xb")  # noqa: SIM115 (open until renamed: its lock)
            handles.append(handle)
            hold_lock(handle)
            aside.append((tmp, path))
            handle.write(data)
            handle.flush()
        with signals_deferred():
            while aside:
                tmp, path = aside[0]
                os.replace(tmp, path)
                aside.pop(0)
    except BaseException:
        for tmp, _ in aside:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        for handle in handles:
            handle.close()
    return [Path(path) for path, _ in files]


_JSON_ENCODER = msgspec.json.Encoder()


def json_bytes(data: Any) -> bytes:
    """``data`` as :func:`write_json_atomic` writes it."""
    try:
        encoded = _JSON_ENCODER.encode(data)
    except UnicodeEncodeError:  # a lone surrogate: a path with a byte that is not UTF-8
        encoded = _escaped_json(data)
    return encoded + b"\n"


def write_json_atomic(path: str | os.PathLike, data: Any) -> Path:
    """Compact UTF-8 JSON. msgspec's encoder: 3 ms for a 5,000-op summary where the standard
    library's took 25 ms, at the end of every run (issue 16). Its floats are the shortest
    round-trip texts as Python's (``4.66e-7`` where ``json`` wrote ``4.66e-07``); a NaN or an
    infinity becomes ``null``, the summary's own spelling of a missing number
    (:func:`.attribution.json_number` maps them before, so none reaches it)."""
    return write_text_atomic(path, json_bytes(data))


def _escaped_json(data: Any) -> bytes:
    """``data`` as ASCII JSON: a lone surrogate is written as JSON's ``\\udce9``, which
    :func:`.workflow.verdicts.load_summary` (any Python ``json``) reads back as the same
    text, so a path keeps its bytes; NaN and infinities as null, as msgspec writes them."""

    def finite(value: Any) -> Any:
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, Mapping):
            return {key: finite(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(item) for item in value]
        return value

    text = json.dumps(finite(data), separators=(",", ":"), allow_nan=False)
    return text.encode("ascii")


def _metric(finding: OpFinding, name: str, worst: str) -> float | None:
    values = [t.metrics.get(name) for t in finding.outputs]
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return None
    return min(values) if worst == "min" else max(values)


def _finite(value: float | None) -> float | None:
    """A metric for JSON: 9 significant digits, NaN as null, +-inf as +-DBL_MAX."""
    return json_number(value)


def op_rows(attribution: Attribution) -> list[dict]:
    """One compact entry per judged op, in execution order (for the chart and for tools)."""
    rows = []
    append = rows.append
    for f in attribution.findings:
        verdict = f.verdict
        if verdict == "unknown" and not f.inputs and f.severity == 0.0:
            continue  # nothing compared (an op whose inputs were not is charted by its outputs)
        outputs = f.outputs
        if len(outputs) == 1:  # most ops: the worst output is the only one
            metrics = outputs[0].metrics
            cosine, red, kl, rmse, mre = (_number(metrics.get(name)) for name in _CHARTED)
        else:
            cosine = _metric(f, "CosineSimilarity", "min")
            red = _metric(f, "RelativeEuclideanDistance", "max")
            kl = _metric(f, "KullbackLeiblerDivergence", "max")
            rmse = _metric(f, "RootMeanSquareError", "max")
            mre = _metric(f, "MeanRelativeError", "max")
        append(
            {
                "op": f.op,
                "type": f.op_type,
                "order": f.order,
                "verdict": verdict,
                "rules": f.rules,
                "cosine": json_number(cosine),
                "red": json_number(red),
                "kl": json_number(kl),
                "rmse": json_number(rmse),
                "mre": json_number(mre),
                "badness": json_number(f.severity) if verdict != "unknown" else None,
                "input_badness": json_number(f.input_badness) if f.inputs else None,
            }
        )
    return rows


_CHARTED = (
    "CosineSimilarity",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "RootMeanSquareError",
    "MeanRelativeError",
)


def _number(value: float | None) -> float | None:
    """What :func:`_metric` gives for one output: None for no value or NaN."""
    return None if value is None or math.isnan(value) else value


HEURISTIC = "most likely (heuristic, not proven by replay)"  # a suspect of the rows alone


BAD_FILE_NOTE = "skipped a bad dump file"


def _nothing_compared_hint(counts: Mapping[str, Any], evidence_missing: Sequence[str] = ()) -> str:
    """What to check when no tensor was compared, from the files that could not be read and
    the engine's row counts (a review: every fusion-on dump cut short was told as "none of
    the fusion-on graph's ops has a dump file ... check -f", naming no file)."""
    if evidence_missing:
        return (
            f"{len(evidence_missing)} dump file(s) cannot be read (first: "
            f"{evidence_missing[0]}): dump them again"
        )
    rows = counts.get("rows") or 0
    if rows and counts.get("no_left_dump") == rows:
        return (
            "none of the fusion-on graph's ops has a dump file in the fusion-on dump folder: "
            "check that -f is the graph of the run dumped in -m"
        )
    if rows and counts.get("no_right_dump", 0) + counts.get("no_left_dump", 0) >= rows:
        return (
            "the fusion-on ops have no fusion-off dump to pair with: check that -cf is the "
            "graph of the run dumped in -g and that both runs are of the same network"
        )
    if rows and counts.get("failed") == rows:
        return "every pair failed: see the CSV's CompareFailReason column"
    return "do the graphs belong to these dumps? see the notes and the CSV's CompareFailReason"


EVIDENCE_MISSING = "evidence missing"
# A replay the user asked for and the memory budget left out (`--no-replay` is a choice): the
# rows alone missed faults the replay proves (a review: "no fused op introduces error", exit 0).
LEFT_OUT_TAIL = "; not proven: the replay was left out by --memory-budget (see the notes)"


def verdict_line(
    attribution: Attribution,
    counts: Mapping[str, Any] | None = None,
    evidence_missing: Sequence[str] = (),
    replay_left_out: bool = False,
) -> str:
    # a replay with no fused op to replay proves nothing: the rows' verdict (a review: "every
    # fused op agrees with its replay", exit 0, where the rows said "not proven clean")
    if attribution.replay is not None and attribution.replay.results:
        line = _replay_verdict_line(attribution, counts or {}, evidence_missing)
    else:
        line = _rows_verdict_line(attribution, counts or {}, evidence_missing, replay_left_out)
        if replay_left_out and not line.startswith(NOTHING_COMPARED):
            line += LEFT_OUT_TAIL
    if evidence_missing and not line.startswith(NOTHING_COMPARED):
        # also without the replay: --no-replay said nothing of the files it could not read
        line = (
            f"{EVIDENCE_MISSING}: {len(evidence_missing)} dump file(s) a verdict needs cannot "
            f"be read (first: {evidence_missing[0]}); " + line
        )
    return line


def _rows_verdict_line(
    attribution: Attribution,
    counts: Mapping[str, Any],
    evidence_missing: Sequence[str],
    replay_left_out: bool,
) -> str:
    """The verdict of the rows alone (``--no-replay``, or the replay left out)."""
    if not any(f.verdict != "unknown" for f in attribution.findings):
        return (
            f"{NOTHING_COMPARED}: no fusion-on output could be paired with a fusion-off one "
            f"({_nothing_compared_hint(counts, evidence_missing)})"
        )
    if attribution.suspects:
        top = attribution.suspects[0]
        return f"{HEURISTIC}: {top.rule} ({top.section}) at {top.ops[0]}"
    if no_rule := attribution.fused_ops_without_rule():
        return f"{HEURISTIC}: {_without_rule(no_rule)}"
    unjudged = attribution.unjudged_fused_ops()
    if unsure := attribution.ops_with_unjudged_inputs():
        line = (
            f"outputs diverge at {_first_three(unsure)}, whose inputs could not be "
            "compared (no fusion-off tensor): not proven clean (dump the fusion-off run "
            "whole, or run with the replay)"
        )
        if attribution.outside_fusion():  # named too (a review: only they were)
            line = f"{_outside_fusion(attribution)}; {line}"
        return line + (_unjudged_fused_tail(unjudged) if unjudged else "") + _unjudged_tail(counts)
    if attribution.outside_fusion():
        return _outside_fusion(attribution) + _unjudged_tail(counts)
    undumped = counts.get("undumped_tasks") or 0  # constants and graph inputs are never dumped
    diverge = any(f.verdict == "propagates" for f in attribution.findings)
    if diverge and unjudged:  # where the error may start: named before the undumped count
        line = "outputs diverge" + _unjudged_fused_tail(unjudged)
    elif diverge and undumped:
        line = (
            f"outputs diverge; {undumped} fusion-on op(s) have no dump file and were not "
            "judged: not proven clean (dump them, or run with the replay)"
        )
    elif diverge:
        line = (
            "outputs diverge, but the rows point at no op where the error starts (check the "
            "network inputs, or run with the replay)"
        )
    elif unjudged:
        line = "no fused op found introducing error" + _unjudged_fused_tail(unjudged)
    elif replay_left_out:
        line = (
            "no rule found by the comparison: fusion-on and fusion-off agree within the thresholds"
        )
    else:
        line = "no fused op introduces error: fusion-on and fusion-off agree within the thresholds"
    return line + _unjudged_tail(counts)


def _unjudged_fused_tail(unjudged: Sequence[str]) -> str:
    """What a verdict without a suspect says of fused ops whose outputs nothing judged."""
    return (
        f"; {len(unjudged)} fused op(s) whose outputs could not be judged "
        f"({_first_three(unjudged)}: no "
        "fusion-off tensor to compare with, a size other than fusion off's, or NaN in every "
        "metric; see their rows): not proven clean"
    )


def _first_three(names: Sequence[str]) -> str:
    """``names``, the first three of them and how many more."""
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def channel_disagreements(attribution: Attribution) -> list[dict]:
    """Fused ops that disagree with their replay in one channel while the whole tensor agrees
    (:func:`.replay_decide.decide`): evidence against them, though no proof."""
    if attribution.replay is None:
        return []
    return [
        {"op": r.op, "rules": r.rules, **r.evidence["channel"]}
        for r in attribution.replay.results
        if r.verdict == "unverified" and "channel" in r.evidence
    ]


def _channels_tail(found: Sequence[Mapping[str, Any]]) -> str:
    first = found[0]
    more = f" (and {len(found) - 1} more fused op(s))" if len(found) > 1 else ""
    return (
        f"; {first['op']} disagrees with its replay in channel {first['channel']} of output "
        f"{first['output']}{more}, a channel far smaller than the tensor's largest value, "
        "while the whole tensor agrees: not proven clean"
    )


def _outside_fusion(attribution: Attribution) -> str:
    return "error starts at ops no fusion rule produced: " + ", ".join(
        f.op for f in attribution.outside_fusion()[:3]
    )


def _without_rule(found: Sequence[Mapping[str, Any]]) -> str:
    """Fused ops blamed whose graph names no fusion rule (see
    ``Attribution.fused_ops_without_rule``), for the verdict line."""
    first = found[0]
    more = f" (and {len(found) - 1} more such fused op(s))" if len(found) > 1 else ""
    originals = ", ".join(str(n) for n in (first.get("original_ops") or [])[:4])
    inferred = first.get("inferred") or []
    if inferred:
        source = first.get("rule_source") or "inferred"
        how = f"; {source}, not proven: {', '.join(inferred[:3])} (bisect to name the rule)"
    else:
        how = ": give its build's fusion_result.json (--fusion-result) or bisect to name the rule"
    return (
        f"fused op {first['op']} introduces the error{more}; the graph names no fusion rule "
        f"for it (its original ops: {originals}){how}"
    )


def _unjudged_tail(counts: Mapping[str, Any]) -> str:
    """What a verdict without a suspect did not look at: ops dumped under -m that the fusion-on
    graph does not name are in no row (a graph of another build, or of a smaller model with
    the same op names, gave a clean verdict for the ops it named only)."""
    unnamed = counts.get("unnamed_dumps") or 0
    if not unnamed:
        return ""
    return (
        f"; {unnamed} of the {counts.get('dumped_ops') or unnamed} ops dumped in the fusion-on "
        "folder are not in the fusion-on graph and were not judged: not proven clean (check "
        "that -f is the graph of the run dumped in -m)"
    )


def _replay_verdict_line(
    attribution: Attribution, counts: Mapping[str, Any], evidence_missing: Sequence[str]
) -> str:
    report = attribution.replay
    if not any(f.verdict != "unknown" for f in attribution.findings) and not report.replayed:
        return (
            f"{NOTHING_COMPARED}: no fusion-on output could be paired with a fusion-off one "
            f"({_nothing_compared_hint(counts, evidence_missing)})"
        )
    unverified = len(report.results) - report.replayed
    tail = f"; {unverified} of {len(report.results)} fused ops unverified" if unverified else ""
    no_rule = attribution.fused_ops_without_rule()
    if attribution.suspects:
        top = attribution.suspects[0]
        line = f"proven by replay: {top.rule} ({top.section}) introduces the error at {top.ops[0]}"
        if len(attribution.suspects) > 1:
            line += f" (+{len(attribution.suspects) - 1} more rule(s))"
        if no_rule:
            line += f"; fused op {no_rule[0]['op']} too, whose rule the graph does not name"
        line += tail
    elif no_rule:
        line = f"proven by replay: {_without_rule(no_rule)}{tail}"
    else:
        undecided = [v for v in attribution.rules if v.verdict == "undecided"]
        if undecided:
            ops = [o["op"] for o in undecided[0].ops if o.get("verdict") == "undecided"]
            line = (
                "undecided between "
                + " and ".join(v.rule for v in undecided[:3])
                + (f": the replay proves fused op {ops[0]} wrong" if ops else "")
                + " (bisect to split them)"
            )
        elif any(v.verdict == "heuristic" for v in attribution.rules):
            names = ", ".join(v.rule for v in attribution.rules if v.verdict == "heuristic")
            line = f"no rule proven; unverified guess (heuristic): {names}{tail}"
        elif channels := channel_disagreements(attribution):
            line = f"no replayed fused op introduces error{tail}" + _channels_tail(channels)
        elif unverified and any(f.verdict in DIVERGING for f in attribution.findings):
            line = f"no replayed fused op introduces error{tail}: not proven clean"
        elif unjudged := attribution.unjudged_fused_ops():
            line = f"no replayed fused op introduces error{tail}" + _unjudged_fused_tail(unjudged)
        elif unverified:  # exit 0 (exit_status): nothing diverges
            line = f"no replayed fused op introduces error{tail}; every output agrees"
        else:
            line = "no fused op introduces error: every fused op agrees with its replay"
        if attribution.outside_fusion():  # the rows saw where the outputs part
            line += "; " + _outside_fusion(attribution)
        line += _unjudged_tail(counts)
    return line


def replay_json(attribution: Attribution) -> dict[str, Any]:
    """The replay part of the summary: per fused op, per rule, the noise floor, coverage."""
    report = attribution.replay
    if report is None:
        return {"replay": None}
    blamed = {s.rule: set(s.ops) for s in attribution.heuristic}
    return {
        "replay": {
            "fused_ops": len(report.results),
            "replayed": report.replayed,
            "coverage": round(report.coverage(), 6),
            "seconds": round(report.seconds, 3),
            "files_read": report.files_read,
            "kernels_available": report.kernels_available,
        },
        "noise_floor": report.noise.to_json(),
        "fused_ops": [r.to_json() for r in report.results],
        "rules": [v.to_json() for v in attribution.rules],
        "unverified_rules": [
            {
                **v.to_json(),
                "ops": _ops_behind(v, blamed.get(v.rule, ()) if v.verdict == "heuristic" else ()),
            }
            for v in attribution.rules
            if v.verdict in ("unverified", "undecided", "heuristic")
        ],
    }


def _ops_behind(verdict: Any, blamed: Any = ()) -> list[str]:
    """The ops that make a rule's verdict (unverified, undecided; a heuristic guess stands on
    the unverified ops the rows blame, ``blamed``), not its first ops that are not clean (a
    review: ops that only propagate were listed, the unverified one only in the reason; a
    guess listed every unverified op of its rule)."""
    wanted = "unverified" if verdict.verdict == "heuristic" else verdict.verdict
    ops = [o["op"] for o in verdict.ops if o["verdict"] == wanted]
    return [o for o in ops if o in blamed][:12] or ops[:12]


def build_summary(
    attribution: Attribution,
    *,
    inputs: Mapping[str, Any],
    counts: Mapping[str, Any] | None = None,
    soc_version: str | None = None,
    csv_path: str | os.PathLike | None = None,
    report_path: str | os.PathLike | None = None,
    notes: Sequence[str] = (),
    evidence_missing: Sequence[str] = (),
    replay_left_out: str | None = None,
) -> dict:
    """``replay_left_out``: the note of a replay the memory budget left out."""
    ops = op_rows(attribution)
    verdicts: dict[str, int] = {}
    for f in attribution.findings:
        verdicts[f.verdict] = verdicts.get(f.verdict, 0) + 1
    all_counts = dict(counts or {})
    all_counts.update(
        {
            "ops_judged": sum(v for k, v in verdicts.items() if k != "unknown"),
            "ops_by_verdict": dict(sorted(verdicts.items())),
            "suspect_rules": len(attribution.suspects),
            "harmless_rules": len(attribution.harmless_rules),
        }
    )
    summary = {
        "format": SUMMARY_FORMAT,
        "tool": f"fusion-switch {__version__}",
        "verdict": verdict_line(attribution, all_counts, evidence_missing, bool(replay_left_out)),
        "evidence_missing": list(evidence_missing),
        "replay_left_out": replay_left_out,
        "suspects": [s.to_json() for s in attribution.suspects],
        "harmless_rules": attribution.harmless_rules,
        "downstream_only_rules": attribution.downstream_only_rules,
        "unattributed_ops": [f.to_json() for f in attribution.unattributed],
        "fused_ops_without_rule": attribution.fused_ops_without_rule(),
        "unjudged_fused_ops": attribution.unjudged_fused_ops(),
        "ops_with_unjudged_inputs": attribution.ops_with_unjudged_inputs(),
        "channel_disagreements": channel_disagreements(attribution),
        "inputs": {
            **{k: _path_text(v) if k in PATH_KEYS else v for k, v in inputs.items()},
            "notes": list(notes),
        },
        "counts": all_counts,
        "soc_version": soc_version,
        "csv": _path_text(csv_path),
        "report": _path_text(report_path),
        "thresholds": attribution.thresholds_json(),
        "notes": list(attribution.notes),
        "ops": ops,
        **replay_json(attribution),
    }
    if _mark_unswitchable(summary):
        from ..catalogue.rules import CANNOT_SWITCH_OFF

        summary["verdict"] += f"; {summary['suspects'][0]['rule']} {CANNOT_SWITCH_OFF}"
    return summary


def _mark_unswitchable(summary: dict) -> bool:
    """Marks ``cannot_switch_off`` on the summary's rules CANN will not switch off (a review:
    the CLI and the editor's quick fix told the user to, while `apply` refused). True when the
    top suspect is one."""
    if not (summary.get("suspects") or summary.get("unverified_rules")):
        return False  # (the catalogue is read only when a rule is named)
    from ..catalogue import builtin_catalogue
    from ..catalogue.rules import mark_unswitchable

    named = [e for key in ("suspects", "rules", "unverified_rules") for e in summary.get(key) or []]
    mark_unswitchable(named, builtin_catalogue())
    suspects = summary.get("suspects")
    return bool(suspects and suspects[0].get("cannot_switch_off"))


PATH_KEYS = ("on_dump", "off_dump", "on_graph", "off_graph", "fusion_result")


def _path_text(value: Any) -> Any:
    """An absolute path string for a path or path string; other values unchanged."""
    if isinstance(value, (str, os.PathLike)) and os.fspath(value):
        return os.path.abspath(os.fspath(value))
    return value


@dataclass
class RuleTable:
    """The ``fusion_result.json`` the rule sections come from (None: none found or usable),
    its records, and the notes that say so."""

    path: Path | None
    table: Mapping[str, Mapping[str, Any]] | None
    notes: list[str]


def rule_table(
    on_graph: Any, given: Mapping[str, Any], fusion_result: str | os.PathLike | None
) -> RuleTable:
    """``fusion_result`` if given, else the one next to the fusion-on graph or dump."""
    notes: list[str] = []
    result_path = Path(fusion_result) if fusion_result else None
    if result_path is None:
        result_path = find_fusion_result(
            getattr(on_graph, "path", None), given.get("on_graph"), given.get("on_dump")
        )
        if result_path is not None:
            result_path = Path(os.path.abspath(result_path))
    table = None
    if result_path is not None:
        try:
            table = load_fusion_result(result_path)
        except (OSError, ValueError) as exc:
            notes.append(f"fusion_result.json ignored: {exc}")
            result_path = None
        else:
            if fusion_result is None:  # found beside the graph or dump: said once it is read
                notes.append(f"rule sections taken from {result_path}")
    return RuleTable(result_path, table, notes)


@dataclass
class StartedReplay:
    """A replay started while the comparison runs (:func:`start_replay`)."""

    rules: RuleTable
    background: Any  # a started BackgroundReplay

    def close(self) -> None:
        self.background.close()


def start_replay(
    source: Any,
    given: Mapping[str, Any],
    fusion_result: str | os.PathLike | None = None,
    workers: int | None = None,
    host: Any = None,
    processes: int | None = None,
    share: bool = True,
) -> StartedReplay:
    """Start the replay of ``source`` (graphs and dump folders, e.g. a ``CompareOutcome`` or
    :meth:`ReplaySource.of`) in a forked child now: it needs no row of the comparison, so it
    runs while the tensors are compared. ``host``: the kept fusion-off helper to run it in
    (see :mod:`.replay_background`), this function's to end if anything fails (it is not
    daemonic: left running, the exit would wait for it). Pass the result to
    :func:`write_outputs`, or ``close()`` it when the comparison fails. ``processes``: the
    replay's processes (None: half of the cores it may use); ``share``: this process may
    measure the replay's end once the rows are done (see :mod:`.replay_budget`)."""
    from .replay_background import BackgroundReplay
    from .replay_cores import overlapping_processes

    try:
        rules = rule_table(getattr(source, "on_graph", None), given, fusion_result)
        background = BackgroundReplay(
            source,
            rules.table,
            workers,
            overlapping_processes(workers) if processes is None else processes,
            share=share,
            host=host,
            rerun_processes=processes,  # a budget's: a replay run again here keeps to it too
        )
        return StartedReplay(rules, background.start())
    except BaseException:
        if host is not None:
            host.close()
        raise


@dataclass
class Outputs:
    """What :func:`write_outputs` produced."""

    summary: dict
    summary_path: Path
    report_path: Path
    attribution: Attribution


def write_outputs(
    outcome: Any,
    out_dir: str | os.PathLike,
    *,
    thresholds: Mapping[str, Threshold] | None = None,
    fusion_result: str | os.PathLike | None = None,
    inputs: Mapping[str, Any] | None = None,
    replay: bool = True,
    workers: int | None = None,
    started: StartedReplay | None = None,
    rows_index: RowIndex | None = None,
    replay_left_out: str | None = None,
) -> Outputs:
    """Attribute an engine outcome (``CompareOutcome``: rows, csv_path, notes, on_graph, counts)
    and write ``summary.json`` and ``report.html`` into ``out_dir`` atomically.

    ``fusion_result``: a ``fusion_result.json`` to take rule sections from; when None, one next
    to the fusion-on graph or dump is used if present. ``started``: the replay begun during the
    comparison (:func:`start_replay`); its rule table and answer are used, and it is closed.
    ``rows_index``: the outcome's rows indexed and judged as the comparison gave them
    (:class:`.thresholds.RowIndex`); ignored unless it holds exactly those rows.
    ``replay_left_out``: the note of a replay the memory budget left out (``replay`` False)."""
    # Attribution and the report build many small acyclic objects next to the comparison's
    # large heap (graphs, rows): a cyclic collection would walk all of it, repeatedly.
    try:
        with collector_paused(freeze=False):
            return _write_outputs(
                outcome,
                out_dir,
                thresholds,
                fusion_result,
                inputs,
                replay,
                workers,
                started,
                rows_index,
                replay_left_out,
            )
    finally:
        if started is not None:
            started.close()


def _write_outputs(
    outcome: Any,
    out_dir: str | os.PathLike,
    thresholds: Mapping[str, Threshold] | None,
    fusion_result: str | os.PathLike | None,
    inputs: Mapping[str, Any] | None,
    replay: bool = True,
    workers: int | None = None,
    started: StartedReplay | None = None,
    rows_index: RowIndex | None = None,
    replay_left_out: str | None = None,
) -> Outputs:
    from .report import render_report

    out = Path(out_dir)
    on_graph = getattr(outcome, "on_graph", None)
    given = dict(inputs or {})
    notes = [str(n) for n in getattr(outcome, "notes", []) or []]
    notes += [
        f"{BAD_FILE_NOTE} (dump it again to compare its op): {e}"
        for e in getattr(outcome, "errors", []) or []
    ]
    rules = started.rules if started is not None else rule_table(on_graph, given, fusion_result)
    notes += rules.notes
    result_path, table = rules.path, rules.table
    if started is not None:
        background = started.background
    elif replay:
        from .replay_background import BackgroundReplay  # with its imports: not for --no-replay

        background = BackgroundReplay(outcome, table, workers).start()
    else:
        background = None
    try:  # the rows are judged while the replay runs (its child finishing its last part)
        if background is not None:
            background.help()
        attribution = attribute(
            list(getattr(outcome, "rows", []) or []),
            on_graph,
            thresholds=thresholds,
            fusion_result=table,
            rows_index=rows_index,
        )
        report = background.result(notes) if background is not None else None
    finally:
        if background is not None:
            background.close()
    if report is not None:
        apply_replay(attribution, report, on_graph, fusion_result=table)
    missing = list(getattr(outcome, "errors", []) or [])
    if report is not None:
        # a reader's error names its file already: "PATH: PATH: ..." otherwise
        missing += [
            why if why.startswith(f"{path}:") else f"{path}: {why}"
            for path, why in report.unreadable.items()
        ]
    missing = list(dict.fromkeys(missing))
    counts = getattr(outcome, "counts", None)
    if counts is not None and hasattr(counts, "as_dict"):
        counts = counts.as_dict()
    summary_path = out / SUMMARY_NAME
    report_path = out / REPORT_NAME
    summary = build_summary(
        attribution,
        inputs={**given, "fusion_result": os.fspath(result_path) if result_path else None},
        counts=counts if isinstance(counts, Mapping) else {},
        soc_version=getattr(on_graph, "soc_version", None),
        csv_path=getattr(outcome, "csv_path", None),
        report_path=report_path,
        notes=notes,
        evidence_missing=missing,
        replay_left_out=None if report is not None else replay_left_out,
    )
    # the report first: summary.json appearing means the run is complete; both or neither
    write_together([(report_path, render_report(summary)), (summary_path, json_bytes(summary))])
    outputs = Outputs(summary, summary_path, report_path, attribution)
    leave_to_exit(outcome, outputs)  # only when the process exits without freeing them
    return outputs
