"""Large realistic documents for benchmarks: catalogue rule names first, then synthetic ones."""

from __future__ import annotations

import json
from collections import Counter

from ..catalogue import Catalogue, Rule, builtin_catalogue

_OPS = ("Conv2D", "MatMul", "Softmax", "LayerNorm", "Transpose", "Reshape", "Add", "Cast")


def sample_rule_names(n_entries: int, catalogue: Catalogue | None = None) -> list[str]:
    """`n_entries` GraphFusion names: the catalogue's (sorted), then synthetic `...FusionPass`."""
    cat = catalogue if catalogue is not None else builtin_catalogue()
    names = cat.names("GraphFusion")[:n_entries]
    i = 0
    while len(names) < n_entries:
        names.append(f"Synthetic{_OPS[i % len(_OPS)]}{i:05d}FusionPass")
        i += 1
    return names


def sample_document(n_entries: int) -> str:
    """A `Switch.GraphFusion` file with `n_entries` entries in the CANN docs layout.

    Every 7th rule is "off" (never one CANN cannot switch off, nor one the catalogue also
    spells in other capitals); the others are "on". Synthetic names are unknown to the built-in
    catalogue (so they get `unknown-rule` warnings) unless the context uses
    `sample_catalogue(n_entries)`.
    """
    cat = builtin_catalogue()
    counts = Counter(n.lower() for s in cat.rules.values() for n in s)
    twins = {n for n, count in counts.items() if count > 1}
    lines = []
    for i, name in enumerate(sample_rule_names(n_entries, cat)):
        rule = cat.get(name, "GraphFusion")
        quiet = not (rule and rule.cannot_switch_off) and name.lower() not in twins
        value = "off" if i % 7 == 3 and quiet else "on"
        lines.append(f"      {json.dumps(name)}: {json.dumps(value)}")
    body = ",\n".join(lines)
    inner = f"\n{body}\n    " if lines else ""
    return '{\n  "Switch": {\n    "GraphFusion": {' + inner + "}\n  }\n}\n"


def sample_catalogue(n_entries: int) -> Catalogue:
    """The built-in catalogue plus the synthetic names of `sample_document(n_entries)`."""
    base = builtin_catalogue()
    extra = Catalogue(origins=["synthetic benchmark rules"])
    for name in sample_rule_names(n_entries, base):
        if base.get(name, "GraphFusion") is None:
            extra.add(
                Rule(
                    name=name,
                    section="GraphFusion",
                    description="Synthetic rule.",
                    origin="synthetic",
                )
            )
    return base.merged(extra)
