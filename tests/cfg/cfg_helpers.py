"""Small helpers shared by the cfg tests."""

from __future__ import annotations

from fusion_switch.catalogue import resolve_target
from fusion_switch.cfg import Context, analyse, apply_edits

GRAPH = "ConvBatchnormFusionPass"  # GraphFusion, can be switched off, no built-in default
UB = "TbeEltwiseFusionPass"  # UBFusion, can be switched off
FORBIDDEN = "AABiasaddConvFusion"  # GraphFusion, on the forbidden-close list

CTX = Context()
ATLAS_350 = Context(target=resolve_target("Atlas 350"))


def found(text: str, ctx: Context = CTX, code: str | None = None) -> list[tuple[str, str]]:
    """(code, covered text) for every finding (or those with `code`), in order."""
    result = analyse(text, ctx)
    return [
        (f.code, text[f.span.start : f.span.end])
        for f in result.findings
        if code is None or f.code == code
    ]


def switch(graph: str = "", ub: str | None = None) -> str:
    """A document in the CANN docs layout with the given GraphFusion / UBFusion bodies."""
    sections = [f'    "GraphFusion": {{\n{graph}\n    }}']
    if ub is not None:
        sections.append(f'    "UBFusion": {{\n{ub}\n    }}')
    return '{\n  "Switch": {\n' + ",\n".join(sections) + "\n  }\n}\n"


def apply(text: str, edits) -> str:
    return apply_edits(text, list(edits))


def sub(template: str) -> str:
    """Fill <G>, <U> and <F> with the GraphFusion, UBFusion and forbidden-close rule names."""
    return template.replace("<G>", GRAPH).replace("<U>", UB).replace("<F>", FORBIDDEN)
