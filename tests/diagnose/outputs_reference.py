"""The diagnose stage as it read before issue 16's fifth round (revision 4231d68), frozen as
the oracle of the differential tests (``test_outputs_differential.py``): the per-op code was
rewritten for speed only, so for any rows and graph the new code must give these answers. One
change of meaning since: a finding counts its output rows no metric judged (thirty-sixth round:
a rule with such an op is not harmless). Another (thirty-seventh round): an op with an
activation input no row judged is not blamed, and is charted by its outputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fusion_switch.diagnose.attribution import (
    PASS_THROUGH_TYPES,
    Attribution,
    OpFinding,
    _apply_replay,
    _builtin_catalogue,
    _rank_rules,
    _rules_most_recent_first,
    _verdict,
)
from fusion_switch.diagnose.report import _esc, _num_cell
from fusion_switch.diagnose.summary import _finite, _metric
from fusion_switch.diagnose.thresholds import (
    DEFAULT_THRESHOLDS,
    RowLike,
    TensorEvidence,
    Threshold,
    _has_numbers,
    _num,
    judge,
)
from fusion_switch.readers.graph_model import NO_TASK_TYPES


def _split_tensor_index(text: str) -> tuple[str, str, int] | None:
    op, _, rest = text.rpartition(":")
    op2, _, kind = op.rpartition(":")
    if kind not in ("input", "output") or not rest.isdigit():
        return None
    return op2, kind, int(rest)


def attribute(
    rows: Sequence[RowLike],
    on_graph: Any,
    *,
    thresholds: Mapping[str, Threshold] | None = None,
    fusion_result: Mapping[str, Mapping[str, Any]] | None = None,
    catalogue: Any = None,
    replay: Any = None,
) -> Attribution:
    """Judge every fusion-on op from the comparison rows and rank the fusion rules.

    With ``replay`` (a ReplayReport), suspects are the rules the replay proves (``introduces``);
    the row heuristic is kept only as labelled guesses (``heuristic``) for rules whose ops the
    replay could not verify. Without it, every suspect is a heuristic guess."""
    thresholds = dict(thresholds or DEFAULT_THRESHOLDS)
    if catalogue is None:
        catalogue = _builtin_catalogue  # a callable: loaded only if a section needs it
    notes: list[str] = []
    by_tensor: dict[tuple[str, str, int], RowLike] = {}
    row_order: dict[str, int] = {}
    indices: dict[str, dict[str, set[int]]] = {}
    for i, row in enumerate(rows):
        parsed = _split_tensor_index(getattr(row, "tensor_index", "") or "")
        if parsed is None:
            continue
        by_tensor[parsed] = row
        row_order.setdefault(parsed[0], i)
        indices.setdefault(parsed[0], {}).setdefault(parsed[1], set()).add(parsed[2])

    ops = list(getattr(on_graph, "ops", []) or [])
    op_by_name = {op.name: op for op in ops}

    judged: dict[tuple[str, str, int], TensorEvidence | None] = {}

    def evidence(op_name: str, kind: str, index: int) -> TensorEvidence | None:
        key = (op_name, kind, index)
        if key in judged:  # an output is judged again as the input of the ops it feeds
            return judged[key]
        row = by_tensor.get(key)
        found = None
        if row is not None and _has_numbers(row.metrics):
            metrics = {k: _num(v) for k, v in row.metrics.items()}
            badness, crossed = judge(metrics, thresholds)
            found = TensorEvidence(f"{op_name}:{kind}:{index}", metrics, badness, crossed)
        judged[key] = found
        return found

    def producer_evidence(ref: str) -> TensorEvidence | None:
        seen = set()
        src, _, idx = ref.rpartition(":")
        index = int(idx) if idx.lstrip("-").isdigit() else 0
        while src and src not in seen:
            seen.add(src)
            found = evidence(src, "output", index)
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

    findings: list[OpFinding] = []
    names = [op.name for op in ops] or list(row_order)
    for order, name in enumerate(names):
        op = op_by_name.get(name)
        seen = indices.get(name, {})
        outputs = [
            ev for k in sorted(seen.get("output", ())) if (ev := evidence(name, "output", k))
        ]
        inputs = []
        data_inputs = op.data_inputs if op is not None else []
        n_inputs = max(len(data_inputs), 1 + max(seen.get("input", ()), default=-1))
        unknown_input = False  # since the thirty-seventh round
        for i in range(n_inputs):
            ev = evidence(name, "input", i)
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
                unknown_input = unknown_input or _activation(data_inputs[i], op_by_name)
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
                len(seen.get("output", ())) - len(outputs),  # since the thirty-sixth round
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


def op_rows(attribution: Attribution) -> list[dict]:
    """One compact entry per judged op, in execution order (for the chart and for tools)."""
    rows = []
    for f in attribution.findings:
        if f.verdict == "unknown" and not f.inputs and not f.severity:
            continue
        rows.append(
            {
                "op": f.op,
                "type": f.op_type,
                "order": f.order,
                "verdict": f.verdict,
                "rules": f.rules,
                "cosine": _finite(_metric(f, "CosineSimilarity", "min")),
                "red": _finite(_metric(f, "RelativeEuclideanDistance", "max")),
                "kl": _finite(_metric(f, "KullbackLeiblerDivergence", "max")),
                "rmse": _finite(_metric(f, "RootMeanSquareError", "max")),
                "mre": _finite(_metric(f, "MeanRelativeError", "max")),
                "badness": _finite(f.severity if f.verdict != "unknown" else None),
                "input_badness": _finite(f.input_badness if f.inputs else None),
            }
        )
    return rows


def table_rows(ops: list) -> list[str]:
    """The loop of the old ``render_report`` that wrote the table's rows."""
    rows = []
    for op in ops:
        rows.append(
            f'<tr class="{_esc(op.get("verdict", ""))}"><td class="num">'
            f"{_esc(op.get('order'))}</td><td><code>{_esc(op.get('op'))}</code></td>"
            f"<td>{_esc(op.get('type'))}</td><td>{_esc(op.get('verdict'))}</td>"
            f"<td>{_esc(', '.join(op.get('rules', [])))}</td>"
            + "".join(_num_cell(op.get(k)) for k in ("cosine", "red", "kl", "rmse", "mre"))
            + _num_cell(op.get("input_badness"))
            + _num_cell(op.get("badness"))
            + "</tr>"
        )
    return rows


NUMBER_KEYS = ("cosine", "red", "kl", "rmse", "mre", "input_badness", "badness")


def _activation(ref: str, op_by_name: Mapping[str, Any]) -> bool:
    """An output of an op with a task, through TransData and Cast (thirty-seventh round)."""
    src, seen = ref.rpartition(":")[0], set()
    while src and src not in seen:
        seen.add(src)
        producer = op_by_name.get(src)
        if producer is None or producer.type in NO_TASK_TYPES:
            return False
        if producer.type not in PASS_THROUGH_TYPES or not producer.data_inputs:
            return True
        src = producer.data_inputs[0].rpartition(":")[0]
    return False
