"""Name the guilty fusion rule: rank rules by the error their fused ops *introduce*.

msaccucmp's CSV lists every tensor; error propagates and grows downstream, so the tensor with the
worst similarity is usually far from its cause. Here a fused op is blamed only when its inputs
agree with the fusion-off run and its outputs do not ("introduces"). Agreement is judged on
several metrics at once, each against a threshold (defaults: formats.md 4.5), because some faults
leave one metric perfect: a dropped scale factor keeps cosine similarity at 1.0 while the
relative Euclidean distance explodes.

How a tensor is judged (:mod:`.thresholds`): every metric with a threshold gives an
*exceedance* (1.0 = exactly at the threshold); a tensor's *badness* is its largest exceedance;
it is out of band when badness > 1, or when it holds NaN or infinity in one run only.

How an op is judged (outputs = its ``:output:`` rows; inputs = its ``:input:`` rows, or, when
msaccucmp could not pair an input (e.g. it comes through a TransData), the output row of the
producer found by walking the fusion-on graph through TransData/Cast):
- ``clean``: every output in band;
- ``introduces``: an output out of band while every compared input is in band; when an input
  uses more than ``NEAR_BAND`` of its band (drift from upstream close to the threshold, which a
  softmax or a normalisation can push over it), the output must also be ``AMPLIFICATION`` times
  worse than that input;
- ``amplifies``: inputs already out of band, but the outputs are at least ``AMPLIFICATION`` times
  worse on both cosine distance and relative Euclidean distance (a second fault downstream of a
  first one);
- ``propagates``: inputs and outputs out of band, no such jump (drift from upstream: not blamed);
- ``unknown``: no output could be compared.

How rules are ranked: a rule is a suspect when one of its ops introduces (or amplifies) error.
Its score is ``log10((1 + output badness) / (1 + input badness))`` of its worst op (halved for
``amplifies``), times ``(0.5 + 0.5 * share)`` where ``share`` is the fraction of the rule's
judged ops that introduce error: a buggy rule tends to be wrong wherever it fires, while a UB rule
that merely shares the faulty op with a graph rule also fires on clean ops. Ties go to the pass
applied most recently on the op. Several passes on one op are all named (``co_rules``).

A rule's section comes from ``fusion_result.json`` when given, else from the op's
``pass_name_ub`` / ``_single_op_ub_pass_name`` (UBFusion), else from the catalogue.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..readers.graph_model import NO_TASK_TYPES
from .json_numbers import json_number
from .thresholds import (
    DEFAULT_THRESHOLDS,
    RowIndex,
    RowLike,
    TensorEvidence,
    Threshold,
)

GRAPH_FUSION, UB_FUSION = "GraphFusion", "UBFusion"
PASS_THROUGH_TYPES = ("TransData", "Cast")  # msaccucmp's SPECIAL_OPS_TYPE
AMPLIFICATION = 10.0
NEAR_BAND = 0.5  # input badness above this is upstream drift close to the threshold
BADNESS_CAP = 1e12  # keeps JSON finite


# ----------------------------------------------------------------------------------------------
# Inputs: result rows and the fusion-on graph (duck-typed, see the protocols)


class OpLike(Protocol):
    name: str
    type: str

    @property
    def data_inputs(self) -> list[str]: ...
    @property
    def pass_names(self) -> list[str]: ...
    @property
    def original_names(self) -> list[str]: ...


@dataclass
class OpFinding:
    op: str
    op_type: str
    order: int
    rules: list[str]  # most recent first
    original_ops: list[str]
    inputs: list[TensorEvidence]
    outputs: list[TensorEvidence]
    verdict: str
    severity: float  # worst output badness (0 when unknown)
    unjudged_outputs: int = 0  # output rows no metric judged (another size, NaN, no fusion off)

    @property
    def input_badness(self) -> float:
        return max((t.badness for t in self.inputs if t.badness is not None), default=0.0)

    @property
    def blamed(self) -> bool:
        return self.verdict in ("introduces", "amplifies")

    @property
    def fused(self) -> bool:
        """Produced by fusion: it stands for other original ops (as ``Op.is_fused``; an op
        with a pass name has rules)."""
        return self.original_ops != [self.op]

    def op_score(self) -> float:
        gain = (1.0 + min(self.severity, BADNESS_CAP)) / (
            1.0 + min(self.input_badness, BADNESS_CAP)
        )
        base = math.log10(max(gain, 1.0))
        return base * (0.5 if self.verdict == "amplifies" else 1.0)

    def to_json(self) -> dict:
        return {
            "op": self.op,
            "type": self.op_type,
            "verdict": self.verdict,
            "severity": json_number(self.severity),
            "rules": self.rules,
            "original_ops": self.original_ops,
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
        }


@dataclass
class Suspect:
    rule: str
    section: str
    section_source: str
    score: float
    ops: list[str]
    original_ops: list[str]
    evidence: list[OpFinding]
    share: float  # blamed ops / judged ops carrying the rule
    judged_ops: int
    co_rules: list[str]  # other rules on the same ops, most recent first
    recency: int = 0
    verdict: str = "heuristic"  # "introduces" only when the replay proved it
    replay: list[dict] = field(default_factory=list)  # replay results of its guilty ops

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "verdict": self.verdict,
            "replay": self.replay,
            "section": self.section,
            "section_source": self.section_source,
            "score": round(self.score, 6),
            "ops": self.ops,
            "original_ops": self.original_ops,
            "share": round(self.share, 6),
            "judged_ops": self.judged_ops,
            "co_rules": self.co_rules,
            "evidence": [f.to_json() for f in self.evidence],
        }

    def headline(self) -> str:
        """One line of evidence: the worst crossed thresholds of the first op."""
        first = self.evidence[0]
        crossed = [c for out in first.outputs for c in out.crossed][:3]
        return f"{first.op} ({first.verdict}): " + ("; ".join(crossed) or "outputs out of band")


@dataclass
class Attribution:
    suspects: list[Suspect]
    harmless_rules: list[dict]
    downstream_only_rules: list[dict]
    unattributed: list[OpFinding]  # ops without a fusion rule that introduce error
    findings: list[OpFinding]
    thresholds: dict[str, Threshold]
    notes: list[str] = field(default_factory=list)
    replay: Any = None  # the ReplayReport when the replay ran
    rules: list = field(default_factory=list)  # RuleVerdict per rule (replay)
    heuristic: list[Suspect] = field(default_factory=list)  # the fallback's guesses, labelled

    def thresholds_json(self) -> dict:
        return {
            name: {"limit": t.limit, "in_band": ">" if t.higher_is_better else "<"}
            for name, t in self.thresholds.items()
        }

    def ops_with_unjudged_inputs(self) -> list[str]:
        """Ops whose outputs are out of band while an activation input could not be compared
        (its fusion-off tensor missing): where the error starts cannot be told (a review: they
        were in no list, and a run without the replay exited 0)."""
        return [f.op for f in self.findings if f.verdict == "unknown" and f.severity > 0.0]

    def outside_fusion(self) -> list[OpFinding]:
        """Ops the rows blame that no fusion produced (not fused ops whose rule is unknown)."""
        return [f for f in self.unattributed if not f.fused]

    def fused_ops_without_rule(self) -> list[dict]:
        """Fused ops blamed for the error whose graph names no fusion rule (their original
        ops only: real Build graphs carry such ops): the replay's proof (``introduces``), or,
        without the replay, the rows' guess (``heuristic``). A review found one proven wrong
        while every surface said "no fused op introduces error", exit 0. Rules inferred from
        fusion_result.json and the catalogue's patterns are candidates only (``inferred``)."""
        if self.replay is not None:
            return [
                {
                    "op": r.op,
                    "verdict": "introduces",
                    "type": r.op_type,
                    "original_ops": r.members,
                    "replay_score": r.score_json,
                    "tolerance": r.tolerance,
                    "inferred": list(r.rules),
                    "rule_source": r.rule_source,
                }
                for r in self.replay.results
                if r.verdict == "introduces" and (not r.rules or r.rules_inferred)
            ]
        return [
            {
                "op": f.op,
                "verdict": "heuristic",
                "type": f.op_type,
                "original_ops": f.original_ops,
                "severity": json_number(f.severity),
            }
            for f in self.unattributed
            if f.fused
        ]

    def unjudged_fused_ops(self) -> list[str]:
        """Fused ops whose dumped outputs no row could judge (a size other than fusion off's,
        every metric NaN) and that the replay, where it ran, did not settle either: no clean
        verdict rests on them (a review: such a run said "agree" and exited 0)."""
        settled = set()
        if self.replay is not None:
            settled = {r.op for r in self.replay.results if r.verdict in _SETTLED}
        return [f.op for f in self.findings if _unjudged(f) and f.op not in settled]


_SETTLED = ("clean", "propagates", "introduces")  # replay verdicts that judged the outputs


def _unjudged(finding: OpFinding) -> bool:
    """A fused op not blamed with an output dumped and compared that no metric judged (one of
    two outputs too, a review; an op not dumped at all is no such case: a dump of chosen ops
    leaves the rest out on purpose)."""
    return bool(finding.rules and finding.unjudged_outputs) and not finding.blamed


# ----------------------------------------------------------------------------------------------


def _distance(metrics: Mapping[str, float | None], name: str) -> float | None:
    value = metrics.get(name)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return 1.0 - value if name == "CosineSimilarity" else abs(value)


def _amplified(inputs: list[TensorEvidence], outputs: list[TensorEvidence]) -> bool:
    """Every robust distance available (1 - cosine, relative Euclidean distance) is at least
    AMPLIFICATION times its worst input value. Requiring all of them keeps mixing a scaled input
    with a good one (cosine drops, distance does not grow) from looking like a new fault."""
    jumps = []
    for name in ("RelativeEuclideanDistance", "CosineSimilarity"):
        ins = [d for t in inputs if (d := _distance(t.metrics, name)) is not None]
        outs = [d for t in outputs if (d := _distance(t.metrics, name)) is not None]
        if ins and outs:  # nothing grows out of an infinite input (inf >= 10 x inf held)
            worst_in = max(ins)
            jumps.append(
                math.isfinite(worst_in)
                and max(outs) > 0
                and max(outs) >= AMPLIFICATION * max(worst_in, 1e-12)
            )
    return bool(jumps) and all(jumps)


def _rules_most_recent_first(op: OpLike) -> list[str]:
    return list(dict.fromkeys(reversed(op.pass_names)))


def load_fusion_result(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """``fusion_result.json`` (any layout) -> {rule: {"section": ..., "effect_times": n}}.

    A thin view over ``readers.fusion_result``: counts summed over sessions and graphs; a rule
    listed in both sections keeps the first. Raises ValueError naming the file and the problem."""
    from ..readers.fusion_result import read_fusion_result

    result: dict[str, dict[str, Any]] = {}
    for (section, rule), effect in read_fusion_result(path).totals().items():
        entry = result.setdefault(rule, {"section": section, "effect_times": 0})
        if entry["section"] == section:
            entry["effect_times"] += effect
    return result


def find_fusion_result(*candidates: str | os.PathLike | None) -> Path | None:
    """A ``fusion_result.json`` next to (or one folder above) any of the given paths."""
    for candidate in candidates:
        if not candidate:
            continue
        p = Path(candidate)
        for folder in (p if p.is_dir() else p.parent, *list(p.parents)[:2]):
            found = folder / "fusion_result.json"
            if found.is_file():
                return found
    return None


def rule_section(
    rule: str, op: OpLike, fusion_result: Mapping[str, Mapping[str, Any]] | None, catalogue
) -> tuple[str, str]:
    # the fused op's own UB marks first (pass_name_ub, _single_op_ub_pass_name): CANN has
    # graph and UB passes of the same name, and fusion_result.json keeps one section per name
    # (a review: its graph_fusion entry sent the switch of a UB-built op to GraphFusion)
    attrs = getattr(op, "attrs", {}) or {}
    ub_names = set(getattr(op, "ub_pass_names", []) or [])
    if rule in ub_names or rule == attrs.get("pass_name_ub"):
        return UB_FUSION, "pass_name_ub"
    if fusion_result and rule in fusion_result:
        return str(fusion_result[rule]["section"]), "fusion_result.json"
    if callable(catalogue):  # loaded on first need: fusion_result.json often answers first
        catalogue = catalogue()
    if catalogue is not None:
        sections = catalogue.section_of(rule)
        if len(sections) == 1:
            return sections[0], "catalogue"
    return GRAPH_FUSION, "assumed (pass_name only, not in the catalogue)"


def _builtin_catalogue() -> Any:
    """The built-in catalogue, imported on first need (fusion_result.json often answers)."""
    from ..catalogue import builtin_catalogue

    return builtin_catalogue()


def attribute(
    rows: Sequence[RowLike],
    on_graph: Any,
    *,
    thresholds: Mapping[str, Threshold] | None = None,
    fusion_result: Mapping[str, Mapping[str, Any]] | None = None,
    catalogue: Any = None,
    replay: Any = None,
    rows_index: RowIndex | None = None,
) -> Attribution:
    """Judge every fusion-on op from the comparison rows and rank the fusion rules.

    With ``replay`` (a ReplayReport), suspects are the rules the replay proves (``introduces``);
    the row heuristic is kept only as labelled guesses (``heuristic``) for rules whose ops the
    replay could not verify. Without it, every suspect is a heuristic guess. ``rows_index``:
    ``rows`` already indexed and judged as they arrived (used only if it holds these rows with
    these thresholds)."""
    thresholds = dict(thresholds or DEFAULT_THRESHOLDS)
    if catalogue is None:
        catalogue = _builtin_catalogue  # a callable: loaded only if a section needs it
    notes: list[str] = []
    if rows_index is None or not rows_index.indexes(rows, thresholds):
        rows_index = RowIndex(thresholds).feed(rows)
    row_order, indices = rows_index.row_order, rows_index.indices
    ops = list(getattr(on_graph, "ops", []) or [])
    op_by_name = {op.name: op for op in ops}
    evidence = rows_index.judged.get

    def producer_evidence(ref: str) -> TensorEvidence | None:
        seen = set()
        src, _, idx = ref.rpartition(":")
        index = int(idx) if idx.lstrip("-").isdigit() else 0
        while src and src not in seen:
            seen.add(src)
            found = evidence((src, "output", index))
            if found is not None:
                return found
            producer = op_by_name.get(src)
            if producer is None or producer.type not in PASS_THROUGH_TYPES:
                return None
            upstream = producer.data_inputs
            if not upstream:
                return None
            ref = upstream[min(index, len(upstream) - 1)]
            src, _, idx = ref.rpartition(":")
            index = int(idx) if idx.lstrip("-").isdigit() else 0
        return None

    def from_computed_op(ref: str) -> bool:
        """``ref`` is an activation: an output of an op with a task (through TransData and
        Cast), not of a constant or a graph input."""
        src = ref.rpartition(":")[0]
        seen = set()
        while src and src not in seen:
            seen.add(src)
            producer = op_by_name.get(src)
            if producer is None or producer.type in NO_TASK_TYPES:
                return False
            if producer.type not in PASS_THROUGH_TYPES or not producer.data_inputs:
                return True
            src = producer.data_inputs[0].rpartition(":")[0]
        return False

    findings: list[OpFinding] = []
    names = [op.name for op in ops] or list(row_order)
    no_indices: dict[str, set[int]] = {}
    for order, name in enumerate(names):
        op = op_by_name.get(name)
        seen = indices.get(name, no_indices)
        output_indices = seen.get("output")
        outputs = (
            [ev for k in sorted(output_indices) if (ev := evidence((name, "output", k)))]
            if output_indices
            else []
        )
        inputs = []
        data_inputs = op.data_inputs if op is not None else []
        n_inputs = max(len(data_inputs), 1 + max(seen.get("input", ()), default=-1))
        unknown_input = False  # an activation input no row judged
        for i in range(n_inputs):
            ev = evidence((name, "input", i))
            if ev is None and i < len(data_inputs):
                upstream = producer_evidence(data_inputs[i])
                if upstream is not None:
                    ev = TensorEvidence(
                        f"{name}:input:{i}",
                        upstream.metrics,
                        upstream.badness,
                        upstream.crossed,
                        via=upstream.tensor,
                    )
            if ev is not None:
                inputs.append(ev)
            if (ev is None or ev.badness is None) and i < len(data_inputs):
                unknown_input = unknown_input or from_computed_op(data_inputs[i])
        rules = _rules_most_recent_first(op) if op is not None else []
        originals = [n for n in (op.original_names if op is not None else []) if n] or [name]
        verdict, severity = _verdict(inputs, outputs, unknown_input)
        findings.append(
            OpFinding(
                name,
                getattr(op, "type", ""),
                order,
                rules,
                originals,
                inputs,
                outputs,
                verdict,
                severity,
                len(output_indices or ()) - len(outputs),
            )
        )

    suspects, harmless, downstream = _rank_rules(findings, op_by_name, fusion_result, catalogue)
    unattributed = [f for f in findings if f.blamed and not f.rules]
    unattributed.sort(key=lambda f: -f.op_score())
    if not any(f.outputs for f in findings):
        notes.append("no output tensor could be compared: nothing to attribute")
    result = Attribution(suspects, harmless, downstream, unattributed, findings, thresholds, notes)
    if replay is not None:
        _apply_replay(result, replay, op_by_name, fusion_result, catalogue)
    return result


def apply_replay(
    result: Attribution,
    replay: Any,
    on_graph: Any,
    *,
    fusion_result: Mapping[str, Mapping[str, Any]] | None = None,
    catalogue: Any = None,
) -> Attribution:
    """What ``attribute(..., replay=replay)`` adds to ``attribute(..., replay=None)``: for a
    replay that finishes while the rows are judged (see :mod:`.replay_background`)."""
    op_by_name = {op.name: op for op in list(getattr(on_graph, "ops", []) or [])}
    _apply_replay(result, replay, op_by_name, fusion_result, catalogue or _builtin_catalogue)
    return result


def _apply_replay(
    result: Attribution,
    report: Any,
    op_by_name: Mapping[str, Any],
    fusion_result: Mapping[str, Mapping[str, Any]] | None,
    catalogue: Any,
) -> None:
    """Replace the heuristic's suspects by the rules the replay proves."""
    from .verdict import CLEAN, INTRODUCES, PROPAGATES, rule_verdicts

    def section_of(rule: str, op_name: str) -> tuple[str, str]:
        op = op_by_name.get(op_name)
        if op is None:
            return GRAPH_FUSION, "assumed (op not in the graph)"
        return rule_section(rule, op, fusion_result, catalogue)

    heuristic = result.suspects
    blamed = {s.rule: list(s.ops) for s in heuristic}
    result.rules = rule_verdicts(report, section_of, blamed)
    by_op = report.by_op()
    findings = {f.op: f for f in result.findings}
    proven: list[Suspect] = []
    for verdict in result.rules:
        if verdict.verdict != INTRODUCES:
            continue
        ops = [o["op"] for o in verdict.ops if o["verdict"] == INTRODUCES]
        replays = [by_op[o] for o in ops]
        worst = max((r.score or 0.0) / max(r.tolerance, 1e-300) for r in replays)
        co_rules = list(dict.fromkeys(x for r in replays for x in r.rules if x != verdict.rule))
        proven.append(
            Suspect(
                verdict.rule,
                verdict.section,
                verdict.section_source,
                math.log10(1.0 + min(worst, BADNESS_CAP)),
                ops,
                list(dict.fromkeys(m for r in replays for m in r.members)),
                [findings[o] for o in ops if o in findings],
                len(ops) / max(1, len(verdict.ops)),
                len(verdict.ops),
                co_rules,
                verdict=INTRODUCES,
                replay=[r.to_json() for r in replays[:12]],
            )
        )
    proven.sort(key=lambda s: (-round(s.score, 9), s.rule))
    result.suspects = proven
    labelled = {v.rule for v in result.rules if v.verdict == "heuristic"}
    result.heuristic = [s for s in heuristic if s.rule in labelled]
    # the rows' "harmless" and "downstream only" stand for a rule whose replayed ops all agree
    # with their replay: the rows called rules the replay proves harmless (a review)
    agreeing = {v.rule for v in result.rules if v.verdict in (CLEAN, PROPAGATES)}
    result.harmless_rules = [h for h in result.harmless_rules if h["rule"] in agreeing]
    result.downstream_only_rules = [
        d for d in result.downstream_only_rules if d["rule"] in agreeing
    ]
    result.replay = report


def _verdict(
    inputs: list[TensorEvidence], outputs: list[TensorEvidence], unknown_input: bool = False
) -> tuple[str, float]:
    """``unknown_input``: an activation input was not judged (its fusion-off tensor missing):
    outputs out of band with the judged inputs in band tell nothing then (a review: the op
    was blamed for an error that started at its undumped producer)."""
    out_b = [t.badness for t in outputs if t.badness is not None]
    if not out_b:
        return "unknown", 0.0
    worst_out = max(out_b)
    if worst_out <= 1.0:
        return "clean", worst_out
    in_b = [t.badness for t in inputs if t.badness is not None]
    worst_in = max(in_b, default=0.0)
    if worst_in <= 1.0 and unknown_input:
        return "unknown", worst_out
    if worst_in <= 1.0:
        # drift close to the edge of the band that crosses it is still drift, not a new error
        new_error = worst_in <= NEAR_BAND or worst_out >= AMPLIFICATION * worst_in
        return ("introduces" if new_error else "propagates"), worst_out
    if _amplified(inputs, outputs):
        return "amplifies", worst_out
    return "propagates", worst_out


def _rank_rules(
    findings: list[OpFinding],
    op_by_name: Mapping[str, Any],
    fusion_result: Mapping[str, Mapping[str, Any]] | None,
    catalogue: Any,
) -> tuple[list[Suspect], list[dict], list[dict]]:
    by_rule: dict[str, list[OpFinding]] = {}
    recency: dict[str, int] = {}
    for f in findings:
        for pos, rule in enumerate(f.rules):
            by_rule.setdefault(rule, []).append(f)
            recency[rule] = min(recency.get(rule, pos), pos)
    suspects: list[Suspect] = []
    harmless: list[dict] = []
    downstream: list[dict] = []
    for rule, fs in by_rule.items():
        op = op_by_name.get(fs[0].op)
        if op is not None:
            section, source = rule_section(rule, op, fusion_result, catalogue)
        else:
            section, source = GRAPH_FUSION, "assumed (op not in the graph)"
        judged = [f for f in fs if f.verdict != "unknown"]
        blamed = sorted((f for f in judged if f.blamed), key=lambda f: (-f.op_score(), f.order))
        if blamed:
            share = len(blamed) / len(judged)
            score = blamed[0].op_score() * (0.5 + 0.5 * share)
            co_rules = list(dict.fromkeys(r for f in blamed for r in f.rules if r != rule))
            originals = list(dict.fromkeys(n for f in blamed for n in f.original_ops))
            suspects.append(
                Suspect(
                    rule,
                    section,
                    source,
                    score,
                    [f.op for f in blamed],
                    originals,
                    blamed,
                    share,
                    len(judged),
                    co_rules,
                    recency[rule],
                )
            )
        elif judged and all(f.verdict == "clean" for f in judged) and not any(map(_unjudged, fs)):
            harmless.append({"rule": rule, "section": section, "ops": len(judged)})
        elif judged:
            downstream.append(
                {
                    "rule": rule,
                    "section": section,
                    "ops": [f.op for f in judged if f.verdict == "propagates"],
                }
            )
    suspects.sort(key=lambda s: (-round(s.score, 9), s.recency, s.rule))
    harmless.sort(key=lambda h: (h["section"], h["rule"]))
    downstream.sort(key=lambda h: (h["section"], h["rule"]))
    return suspects, harmless, downstream
