"""Which fusion rules built a fused op: its graph attributes, else inferred.

The graph says it directly when it carries ``pass_name`` (every pass, oldest first),
``pass_name_ub`` (the UB pass) and ``_single_op_ub_pass_name``. Real graphs often carry none
(all 53 fused ops of the ResNet-50 samples): then the rules are *inferred* from the run's
fusion_result.json (rules that took effect) and the catalogue's op patterns (a rule whose
pattern names the original ops' types), and the answer says "inferred".

The fusion_result.json reader is used through :func:`load_rules_table` only, so that it can
be swapped for the reader of every layout (``readers/fusion_result.py``) in one place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

FROM_GRAPH = "graph attributes"
INFERRED = "inferred (fusion_result.json + catalogue patterns)"
INFERRED_CATALOGUE = "inferred (catalogue patterns only)"
_PATTERN = re.compile(r"pattern matches ([^.]+)\.")


def load_rules_table(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """fusion_result.json -> {rule: {"section", "effect_times"}} (raises ValueError)."""
    from .attribution import load_fusion_result

    return load_fusion_result(path)


@lru_cache(maxsize=1)
def rule_patterns() -> dict[str, frozenset[str]]:
    """Rule -> the op types its catalogue pattern names (rules with a known pattern only)."""
    from ..catalogue import builtin_catalogue

    out: dict[str, frozenset[str]] = {}
    catalogue = builtin_catalogue()
    for section in ("GraphFusion", "UBFusion"):
        for name in catalogue.names(section):
            rule = catalogue.get(name, section)
            found = _PATTERN.search(getattr(rule, "description", "") or "")
            if found:
                out[name] = frozenset(t.strip() for t in found.group(1).split(","))
    return out


@lru_cache(maxsize=1)
def ub_section_rules() -> frozenset[str]:
    """The rules the built-in catalogue puts in UBFusion."""
    from ..catalogue import builtin_catalogue

    return frozenset(builtin_catalogue().names("UBFusion"))


def infer_rules(
    member_types: Sequence[str], fusion_result: Mapping[str, Mapping[str, Any]] | None
) -> list[str]:
    """Rules whose catalogue pattern covers the most original op types (at least two, or the
    only type of a one-op group), restricted to rules that took effect when a table is given."""
    types = set(member_types)
    if not types:
        return []
    effective = None
    if fusion_result:
        effective = {r for r, info in fusion_result.items() if int(info.get("effect_times", 0))}
    best: list[str] = []
    best_cover = 0
    for rule, pattern in rule_patterns().items():
        if effective is not None and rule not in effective:
            continue
        cover = len(types & pattern)
        if cover < min(2, len(types)):
            continue
        if cover > best_cover:
            best, best_cover = [rule], cover
        elif cover == best_cover:
            best.append(rule)
    if effective is None and len(best) > 3:
        return []  # the catalogue alone cannot narrow it down: say so rather than guess
    return sorted(best)


def op_rules(
    op: Any,
    member_types: Sequence[str],
    fusion_result: Mapping[str, Mapping[str, Any]] | None,
) -> tuple[list[str], str]:
    """(rules most recent first, where they come from)."""
    names = list(op.pass_names)
    if names:
        return list(dict.fromkeys(reversed(names))), FROM_GRAPH
    inferred = infer_rules(member_types, fusion_result)
    return inferred, INFERRED if fusion_result else INFERRED_CATALOGUE
