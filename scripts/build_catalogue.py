"""Build schemas/fusion_rules.json from the research catalogue (shared/catalogue/fusion_rules.json).

The research file keeps facts as free-text `notes`; the server needs them as fields. This script
keeps every name, section, description, source and the notes verbatim, and adds normalised fields
(`cannot_switch_off`, `default`, `products`, ...) parsed from the notes. Run it when the research
catalogue changes, then `scripts/generate_schema.py`.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "catalogue" / "fusion_rules.json"
DEFAULT_OUTPUT = ROOT / "schemas" / "fusion_rules.json"

# hicann/docs npu tags -> product names (from the research catalogue's schema_note).
PRODUCT_TAGS = {
    "950": "Atlas 350 (Ascend 950PR/950DT)",
    "A3": "Atlas A3 training/inference",
    "910b": "Atlas A2 training/inference",
    "910": "Atlas training series",
    "310p": "Atlas inference series",
    "310b": "Atlas 200I/500 A2",
}

_DEFAULT_RE = re.compile(r'built-in fusion_config\.json default: "(on|off)"')
_PRIORITY_RE = re.compile(r"built-in priority (Top|Main|Down)=(\d+)")
_ALSO_IN_RE = re.compile(r"also in: (.*)")


def normalise(rule: dict) -> dict:
    notes = rule.get("notes", "")
    parts = [p.strip() for p in notes.split("; ") if p.strip()]
    also_in: list[str] = []
    for p in parts:
        m = _ALSO_IN_RE.match(p)
        if m:
            also_in.append(m.group(1))
    default = _DEFAULT_RE.search(notes)
    priority = _PRIORITY_RE.search(notes)
    tags = rule.get("doc_products", [])
    out = {
        "name": rule["name"],
        "section": rule["section"],
        "description": rule["description"],
        "registration": rule["registration"],
        "source": rule["source"],
        "cannot_switch_off": "ForbiddenClosedPass" in notes or "FORBIDDEN_CLOSE" in notes,
        "force_closed": "kForceClosePassVec" in notes,
        "license_controlled": "kLicensePassNameMap" in notes,
        "default": default.group(1) if default else None,
        "o1_exceptional": "ExceptionalPassOfO1Level" in notes,
        "json_graph_rule": "JSON graph rule" in notes,
        "section_uncertain": "section unknown" in notes,
        "in_official_sample": "official fusion_switch sample" in notes,
        "priority": {"stage": priority.group(1), "value": int(priority.group(2))}
        if priority
        else None,
        "documented": "documented in CANN fusion-pattern reference" in notes,
        "doc_product_tags": tags,
        "products": [PRODUCT_TAGS.get(t, t) for t in tags],
        "notes": notes,
    }
    return out


def build(source: Path) -> dict:
    data = json.loads(source.read_text(encoding="utf-8"))
    rules = sorted((normalise(r) for r in data["rules"]), key=lambda r: (r["section"], r["name"]))
    return {
        "catalogue": "fusion-switch built-in",
        "description": (
            "Known CANN GraphFusion and UBFusion rule names. Built by scripts/build_catalogue.py "
            "from the project's research catalogue; descriptions are hints derived from each "
            "pass's pattern."
        ),
        "generated_from": data.get("generated", ""),
        "product_tags": PRODUCT_TAGS,
        "sources": data.get("sources", []),
        "rules": rules,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    catalogue = build(args.source)
    args.output.write_text(
        json.dumps(catalogue, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"wrote {len(catalogue['rules'])} rules to {args.output}")


if __name__ == "__main__":
    main()
