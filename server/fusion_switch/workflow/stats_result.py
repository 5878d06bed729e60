"""A comparison of statistics dumps as the editor shows it (`compare`'s statistics route).

Statistics (max, min, mean or L2 norm per tensor) show *where* the two runs first drift apart,
never *which fusion rule* did it: that needs the tensors (metrics, replay). So the editor shows
the first divergence and says so, blames no rule, and leaves no earlier comparison's verdict
standing on the configuration. Pure: the summary `compare --format json` printed, as a dict.
"""

from __future__ import annotations

from typing import Any

TENSORS_NEEDED = (
    "Statistics cannot name a fusion rule: the editor marks rules from a comparison of tensor "
    "dumps only (dump_data: tensor, fusion on and off), which measures each fused op and "
    "replays it."
)


def _number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def first_divergence(summary: dict) -> dict | None:
    first = summary.get("first_divergence")
    return first if isinstance(first, dict) else None


def divergence(first: dict) -> str:
    """The first divergence of a summary: op (type) tensor [leaf]: status (differences); as
    the command line and the editor both say it."""
    rel = first.get("relative_difference")
    detail = ", ".join(f"{k} {_number(v)}" for k, v in rel.items()) if isinstance(rel, dict) else ""
    where = f" [{first['leaf']}]" if first.get("leaf") else ""
    return (
        f"{first.get('op')} ({first.get('type')}) {first.get('tensor')}{where}: "
        f"{first.get('status')}" + (f" ({detail})" if detail else "")
    )


def verdict(summary: dict) -> str:
    """One line: the first tensor whose statistics drift, or that none does."""
    counts = summary.get("counts") if isinstance(summary.get("counts"), dict) else {}
    compared = counts.get("compared", 0)
    first = first_divergence(summary)
    if first is None:
        return f"statistics of {compared} tensors compared: none drifts past the threshold"
    return f"statistics of {compared} tensors compared: first divergence at {divergence(first)}"


def message(summary: dict, cfg_name: str, *, dropped: bool) -> str:
    """What the user is told; ``dropped``: an earlier comparison's marks were taken off."""
    text = f"fusion-switch: {verdict(summary)}. {TENSORS_NEEDED}"
    text += f" No rule is marked in {cfg_name}"
    text += "; the marks of its earlier comparison were removed." if dropped else "."
    if summary.get("csv"):
        text += f" Per tensor: {summary['csv']}"
    return text


def brief(summary: dict) -> dict:
    """The compare command's answer for a statistics run (no suspects, ever)."""
    first = first_divergence(summary)
    return {
        "kind": "statistics",
        "verdict": verdict(summary),
        "suspects": [],
        "firstDivergence": (
            {k: first.get(k) for k in ("op", "type", "tensor", "leaf", "status")} if first else None
        ),
        "counts": summary.get("counts") if isinstance(summary.get("counts"), dict) else {},
        "csv": summary.get("csv"),
        "notes": [n for n in summary.get("notes") or [] if isinstance(n, str)],
    }
