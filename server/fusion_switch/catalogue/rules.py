"""Fusion rules: what CANN's built-in passes are called, where they belong, what switching
them does."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

SECTIONS = ("GraphFusion", "UBFusion")
OTHER_SECTION = {"GraphFusion": "UBFusion", "UBFusion": "GraphFusion"}
SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"
BUILTIN_CATALOGUE = SCHEMAS_DIR / "fusion_rules.json"


@dataclass(frozen=True)
class Rule:
    name: str
    section: str
    description: str = ""
    registration: str = ""
    source: str = ""
    cannot_switch_off: bool = False
    force_closed: bool = False
    license_controlled: bool = False
    default: str | None = None  # built-in fusion_config.json default ("on"/"off"), None = on
    o1_exceptional: bool = False
    json_graph_rule: bool = False
    section_uncertain: bool = False
    products: tuple[str, ...] = ()
    doc_product_tags: tuple[str, ...] = ()
    notes: str = ""
    origin: str = "built-in"  # which catalogue file defined it

    @property
    def read_by_ge(self) -> bool:
        """Registered with GE itself (REG_FUSION_PASS, REG_DECOMPOSE_PASS): GE's pass executor
        runs it, and reads its switch from a JSON file only (FusionUtils::ParseFusionSwitch;
        FE alone falls back to the old line format)."""
        return self.registration.startswith(("REG_FUSION_PASS", "REG_DECOMPOSE_PASS"))

    @classmethod
    def from_json(cls, obj: dict, origin: str = "built-in") -> Rule:
        return cls(
            name=obj["name"],
            section=obj["section"],
            description=obj.get("description", ""),
            registration=obj.get("registration", ""),
            source=obj.get("source", ""),
            cannot_switch_off=bool(obj.get("cannot_switch_off", False)),
            force_closed=bool(obj.get("force_closed", False)),
            license_controlled=bool(obj.get("license_controlled", False)),
            default=obj.get("default"),
            o1_exceptional=bool(obj.get("o1_exceptional", False)),
            json_graph_rule=bool(obj.get("json_graph_rule", False)),
            section_uncertain=bool(obj.get("section_uncertain", False)),
            products=tuple(obj.get("products", ())),
            doc_product_tags=tuple(obj.get("doc_product_tags", ())),
            notes=obj.get("notes", ""),
            origin=origin,
        )


@dataclass
class Catalogue:
    """Rule names by section. A name may exist in both sections (rare); lookups say which."""

    rules: dict[str, dict[str, Rule]] = field(default_factory=lambda: {s: {} for s in SECTIONS})
    origins: list[str] = field(default_factory=list)

    def add(self, rule: Rule) -> None:
        self.rules.setdefault(rule.section, {})[rule.name] = rule

    def get(self, name: str, section: str | None = None) -> Rule | None:
        if section is not None:
            return self.rules.get(section, {}).get(name)
        for sec in SECTIONS:
            rule = self.rules[sec].get(name)
            if rule is not None:
                return rule
        return None

    def section_of(self, name: str) -> list[str]:
        return [s for s in SECTIONS if name in self.rules[s]]

    def names(self, section: str) -> list[str]:
        return sorted(self.rules.get(section, {}))

    def __len__(self) -> int:
        return sum(len(v) for v in self.rules.values())

    def suggest(self, name: str, section: str | None = None, n: int = 3) -> list[str]:
        """Close rule names for a misspelt one, best first (case differences count as closest)."""
        if section:
            pool = self.names(section)
        else:
            pool = sorted({r for s in SECTIONS for r in self.rules[s]})
        lower = {p.lower(): p for p in pool}
        exact_case = lower.get(name.lower())
        found = difflib.get_close_matches(name, pool, n=n, cutoff=0.8)
        if exact_case and exact_case != name:
            found = [exact_case, *[f for f in found if f != exact_case]][:n]
        return found

    def merged(self, other: Catalogue) -> Catalogue:
        result = Catalogue({s: dict(self.rules[s]) for s in SECTIONS}, [*self.origins])
        for sec in SECTIONS:
            for rule in other.rules.get(sec, {}).values():
                base = result.rules[sec].get(rule.name)
                result.rules[sec][rule.name] = _overlay(base, rule) if base else rule
        result.origins.extend(other.origins)
        return result


def _overlay(base: Rule, extra: Rule) -> Rule:
    """An extra catalogue overrides only what it states (empty fields keep the built-in facts)."""
    changes = {k: v for k, v in extra.__dict__.items() if v not in ("", None, (), False)}
    return replace(base, **changes)


def catalogue_from_json(data: dict, origin: str) -> Catalogue:
    cat = Catalogue(origins=[origin])
    for obj in data.get("rules", []):
        cat.add(Rule.from_json(obj, origin))
    return cat


CANNOT_SWITCH_OFF = (
    "cannot be switched off: it is on CANN's forbidden-close list, so CANN keeps it on "
    "whatever the file says"
)


def mark_unswitchable(entries: Iterable[Any], catalogue: Catalogue) -> None:
    """Marks ``cannot_switch_off`` on each rule entry (a dict with "rule" and "section", as a
    comparison's summary names them) that ``catalogue`` puts on CANN's forbidden-close list,
    so that no surface tells the user to switch it off; the mark of an entry it does not put
    there is removed (the server's catalogue changes with its settings: a review)."""
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("rule"), str):
            continue
        rule = catalogue.get(entry["rule"], entry.get("section"))
        if rule is not None and rule.cannot_switch_off:
            entry["cannot_switch_off"] = True
        else:
            entry.pop("cannot_switch_off", None)


@cache
def builtin_catalogue() -> Catalogue:
    data = json.loads(BUILTIN_CATALOGUE.read_text(encoding="utf-8"))
    return catalogue_from_json(data, f"built-in ({len(data['rules'])} rules)")
