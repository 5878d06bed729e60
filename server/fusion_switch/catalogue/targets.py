"""Targets: which product a `--soc_version` or product name means, and what fusion it supports."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache

from .rules import SCHEMAS_DIR


@dataclass(frozen=True)
class Target:
    id: str
    product: str
    chips: str
    ub_fusion: bool
    doc_tag: str | None
    given: str  # what the user wrote (a soc_version or a product name)
    note: str = ""

    @property
    def label(self) -> str:
        return self.product if self.given == self.product else f"{self.product} ({self.given})"


@cache
def _targets() -> list[dict]:
    return json.loads((SCHEMAS_DIR / "targets.json").read_text(encoding="utf-8"))["targets"]


def _squash(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).lower()


def resolve_target(text: str | None) -> Target | None:
    """Map a soc_version (`Ascend950PR_9599`) or a product name (`Atlas 350`) to a Target."""
    if not text or not text.strip():
        return None
    given = text.strip()
    for t in _targets():
        if any(re.fullmatch(p, given) for p in t["soc_patterns"]):
            return _make(t, given)
    key = _squash(given)
    for t in _targets():
        if key in {_squash(a) for a in [t["product"], *t["aliases"]]}:
            return _make(t, given)
    return None


def known_target_names() -> list[str]:
    """Suggestions for the fusionSwitch.target setting."""
    names: list[str] = []
    for t in _targets():
        names.append(t["product"])
        names.extend(a for a in t["aliases"] if a.startswith("Ascend"))
    names.extend(["Ascend950PR_9599", "Ascend950PR_9589", "Ascend950DT_9591"])
    return list(dict.fromkeys(names))


def _make(t: dict, given: str) -> Target:
    return Target(
        id=t["id"],
        product=t["product"],
        chips=t["chips"],
        ub_fusion=bool(t["ub_fusion"]),
        doc_tag=t.get("doc_tag"),
        given=given,
        note=t.get("note", ""),
    )
