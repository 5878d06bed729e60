"""Which CANN component a catalogue rule belongs to, in the words of CANN's logs and docs.

The catalogue's `source` field is provenance (a repository path); hovers and completion show the
component instead. Derived from the registration macro and where the pass was found; when neither
tells, the answer says the implementation was not located rather than guessing.
"""

from __future__ import annotations

import re

from ..catalogue import Rule

_OPS_REPO = re.compile(r"hicann/(ops-[a-z]+)")
_NOT_LOCATED = "implementation not located"


def cann_component(rule: Rule) -> str:
    """E.g. "FE graph fusion (libfe)", "TBE UB fusion (built-in ops fusion passes)"."""
    reg, src = rule.registration, rule.source
    ub = rule.section == "UBFusion"
    if "BUFFER_FUSION_PASS" in reg:
        return "TBE UB fusion (built-in ops fusion passes)"
    if "nn_engine" in src:
        return "FE graph fusion (libfe)"
    if "BUILT_IN_GRAPH_RULE" in reg:
        return "FE JSON graph fusion rule (built_in_graph_rules.json)"
    if "ops/built-in/fusion_pass" in src:
        return "built-in ops graph fusion pass (opp fusion_pass)"
    repo = _OPS_REPO.search(src)
    if repo:
        return f"{repo.group(1)} ops graph fusion pass"
    kind = "TBE UB fusion" if ub else "graph fusion"
    if "fusion_config.json" in reg:
        return f"{kind} (listed in CANN's built-in fusion_config.json; {_NOT_LOCATED})"
    if "documented only" in reg or src.startswith("doc sample"):
        return f"{kind} (CANN documentation; {_NOT_LOCATED})"
    return f"{kind} (unverified)"
