"""Completion cases whose client-visible result is pinned in `data/completion_golden.json`.

Each case is a document with `|` at the cursor, completed under every client variant
(snippets or not, markdown documentation or plain text) and, for a document with
characters outside the BMP before the cursor, every position encoding. The catalogue is a
fixed subset of the built-in one plus two made-up rules (a non-ASCII description; a name with
the characters a snippet must escape), so the golden file does not move when the built-in
catalogue is refreshed.

`python tests/lsp/completion_cases.py` rewrites the golden file: only when the items are meant
to change (the file was recorded from the code before completion was made fast).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fusion_switch.catalogue import Catalogue, Rule, builtin_catalogue
from fusion_switch.cfg.model import Context

GOLDEN = Path(__file__).resolve().parent / "data" / "completion_golden.json"

_GRAPH = (
    "ConvBatchnormFusionPass",
    "AABiasaddConvFusion",  # on the forbidden-close list
    "ZConcatDFusionPass",
    "MatMulBiasAddFusionPass",
    "SoftmaxGradExtFusion",
    "LayerNormFusionPass",
)
_UB = ("TbeEltwiseFusionPass", "TbeConvDequantQuantFusionPass", "TbeReduceElemwiseFusionPass")


def catalogue() -> Catalogue:
    base = builtin_catalogue()
    out = Catalogue(origins=["completion golden"])
    for section, names in (("GraphFusion", _GRAPH), ("UBFusion", _UB)):
        for name in names:
            rule = base.get(name, section)
            out.add(rule if rule is not None else Rule(name=name, section=section))
    out.add(Rule(name="Fusion融合Pass", section="GraphFusion", description="融合 “quotes” \\ é"))
    out.add(Rule(name="Odd$Name}Pass", section="GraphFusion", description="Has $ and } and \\."))
    return out


CONTEXT = Context(catalogue=catalogue())

CASES: dict[str, str] = {
    "empty-file": "|",
    "top-level-empty": "{|}",
    "top-level-in-quotes": '{"Sw|"}',
    "switch-sections": '{"Switch": {|}}',
    "graph-empty-section": '{"Switch": {"GraphFusion": {|}}}',
    "graph-in-quotes-one-present": (
        '{"Switch": {"GraphFusion": {"LayerNormFusionPass": "on", "Conv|"}}}'
    ),
    "graph-bare-word": '{"Switch": {"GraphFusion": {Conv|}}}',
    "graph-key-with-colon": '{"Switch": {"GraphFusion": {"Conv|": "off"}}}',
    "graph-member-follows": '{"Switch": {"GraphFusion": {|\n  "ZConcatDFusionPass": "on"}}}',
    "ub-section": '{\n  "Switch": {\n    "UBFusion": {\n      "Tbe|"\n    }\n  }\n}\n',
    "value-after-colon": '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": |}}}',
    "value-in-quotes": '{"Switch": {"GraphFusion": {"AABiasaddConvFusion": "o|"}}}',
    "value-next-member": '{"Switch": {"GraphFusion": {"X": |\n "Y": "on"}}}',
    "priority-sections": '{"Priority": {|}}',
    "priority-stages": '{"Priority": {"GraphFusion": {|}}}',
    "priority-rules": '{"Priority": {"UBFusion": {"Main": {"Tbe|"}}}}',
    "o1-list": '{"ExceptionalPassOfO1Level": ["|"]}',
    "lines-name": "ConvBatchnormFusionPass:on\nZConc|",
    "lines-value": "ConvBatchnormFusionPass:o|",
    "lines-empty-line": "ZConcatDFusionPass:off\n|",
    "non-ascii-before-cursor": '{"Switch": {"GraphFusion": {"é😀注": "on", "Mat|"}}}',
}

VARIANTS = [
    {"snippets": s, "markdown": m, "encoding": "utf-16"}
    for s in (False, True)
    for m in (False, True)
]
ENCODINGS = ("utf-8", "utf-16", "utf-32")


def variants(case: str) -> list[dict]:
    if case != "non-ascii-before-cursor":
        return VARIANTS
    return [{"snippets": True, "markdown": True, "encoding": e} for e in ENCODINGS]


def key(case: str, variant: dict) -> str:
    return (
        f"{case} snippets={variant['snippets']} markdown={variant['markdown']} "
        + (variant["encoding"])
    )


def split(marked: str) -> tuple[str, int]:
    offset = marked.index("|")
    return marked[:offset] + marked[offset + 1 :], offset


def client_result(marked: str, variant: dict) -> dict:
    """The completion `result` a client receives for the case, as parsed JSON."""
    from fusion_switch import cfg
    from fusion_switch.lsp.capabilities import ClientFeatures
    from fusion_switch.lsp.convert import Converter
    from fusion_switch.lsp.features.completion import completion_json
    from fusion_switch.lsp.text import LineIndex

    text, offset = split(marked)
    client = ClientFeatures(snippets=variant["snippets"], completion_markdown=variant["markdown"])
    conv = Converter(LineIndex(text), variant["encoding"], client)
    return json.loads(str(completion_json(cfg.parse(text), offset, CONTEXT, conv)))


def record() -> dict:
    return {
        key(case, variant): client_result(marked, variant)
        for case, marked in CASES.items()
        for variant in variants(case)
    }


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(record(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)
