"""Markdown about keys and values, shared by hover, completion and the generated JSON schema."""

from __future__ import annotations

from ..catalogue import Rule
from .component import cann_component
from .syntax import shorten

TOP_LEVEL_DOCS = {
    "Switch": (
        "Fusion switches: `GraphFusion` and `UBFusion` objects mapping rule names (or `ALL`) to "
        '`"on"`/`"off"`. The file is passed to ATC `--fusion_switch_file`, GE option '
        "`ge.fusionSwitchFile` or TorchAir `fusion_switch_file`."
    ),
    "Priority": (
        "Custom priorities: `Priority.GraphFusion|UBFusion.Top|Main|Down` map a rule name to an "
        "integer string. Custom ranges: Top `[0, 1000)`, Main `[1000, 2000)`, Down `[2000, 3000)`."
    ),
    "ExceptionalPassOfO1Level": (
        "Array of pass names FE turns on before it reads their switch, at any optimisation "
        'level (`GetFusionSwitchByOptimizationOption`): an `"off"` for them changes '
        "nothing. CANN uses it in its built-in configuration files; it must be an array of "
        "strings."
    ),
}

SECTION_DOCS = {
    "GraphFusion": (
        "Graph fusion rules (graph-level rewrites, run before operator compilation). Both FE and "
        "the GE executor for `REG_FUSION_PASS` passes read this section."
    ),
    "UBFusion": (
        "UB (buffer) fusion rules: fuse operators into one kernel that keeps data in the Unified "
        "Buffer. Not supported on Atlas 350 (Ascend 950PR/950DT), where this section can be "
        "removed."
    ),
}

STAGE_DOCS = {
    "Top": "Runs first. Custom priorities in `[0, 1000)`.",
    "Main": "Runs in the main stage. Custom priorities in `[1000, 2000)`.",
    "Down": "Runs last. Custom priorities in `[2000, 3000)`.",
}

EMPTY_NAME_MESSAGE = (
    'Empty rule name: no rule is called "", so CANN ignores this entry. Type a rule name '
    "(completion lists them) or delete the entry."
)
PRIORITY_RANGES = {"Top": (0, 1000), "Main": (1000, 2000), "Down": (2000, 3000)}


def all_markdown(section: str | None) -> str:
    where = f"every {section} rule" if section else "every rule (both sections)"
    return (
        f"**ALL**: the switch for {where} that this file does not name.\n\n"
        "CANN looks a rule up by its own name first, then `ALL`, so:\n"
        "- explicit entries in this file win over `ALL`;\n"
        "- rules with a built-in default in CANN's own `fusion_config.json` keep that default "
        '(with `"ALL": "off"`, a built-in `"on"` stays on; with `"ALL": "on"`, a built-in '
        '`"off"` stays off);\n'
        "- rules on CANN's forbidden-close list stay on whatever `ALL` says."
    )


def rule_markdown(rule: Rule) -> str:
    """What the rule does and what switching it means, in short markdown."""
    lines = [f"**{rule.name}** ({rule.section})", ""]
    if rule.description:
        lines += [rule.description, ""]
    facts = []
    if rule.cannot_switch_off:
        facts.append("- **Cannot be switched off**: CANN keeps it on whatever the file says.")
    else:
        facts.append("- Can be switched off.")
    if rule.force_closed:
        facts.append("- Force-closed by CANN on some configurations (`kForceClosePassVec`).")
    if rule.license_controlled:
        facts.append("- License-controlled: CANN may switch it regardless of the file.")
    if rule.default is not None:
        facts.append(
            f'- Built-in default: `"{rule.default}"` (CANN\'s fusion_config.json; it beats a '
            "user `ALL`)."
        )
    else:
        facts.append("- Built-in default: on.")
    if rule.o1_exceptional:
        facts.append(
            "- Listed in `ExceptionalPassOfO1Level`: FE turns it on before it reads its switch, "
            'at any optimisation level (`"off"` changes nothing).'
        )
    if rule.json_graph_rule:
        facts.append("- A JSON graph fusion rule (switched under GraphFusion).")
    if rule.section_uncertain:
        facts.append("- Its section is uncertain in the sources.")
    if rule.products:
        facts.append("- Documented for: " + ", ".join(rule.products) + ".")
    if rule.registration:
        facts.append(f"- Registration: {rule.registration}.")
    if rule.source:
        facts.append(f"- Source: {cann_component(rule)}.")
    facts.append(f"- Catalogue: {rule.origin}.")
    return "\n".join(lines + facts)


ALL_VALUE_DOCS = {
    "on": (
        "`on`: switches on every rule of this section that is not named explicitly "
        "(rules whose built-in default is off stay off)."
    ),
    "off": (
        "`off`: switches off every rule of this section that is not named explicitly "
        "and has no built-in default (forbidden-close rules stay on)."
    ),
}


def value_markdown(rule: Rule | None, name: str, value: str) -> str:
    """What "on" / "off" means for this entry."""
    if value not in ("on", "off"):
        return 'Must be the string `"on"` or `"off"` (lower case).'
    if name == "ALL":
        return ALL_VALUE_DOCS[value]
    name = shorten(name)
    if value == "off":
        if rule is not None and rule.cannot_switch_off:
            return f"`off` has **no effect** on `{name}`: it is on CANN's forbidden-close list."
        return f"`off`: CANN does not apply `{name}`; the operators it would fuse stay separate."
    if rule is not None and rule.force_closed:
        return f"`on`: requested, but CANN may force-close `{name}`."
    return f"`on`: CANN applies `{name}` where its pattern matches (the default)."


def one_line(rule: Rule) -> str:
    """A short plain description (schema `description`)."""
    text = rule.description or f"{rule.section} rule {rule.name}."
    if rule.cannot_switch_off:
        text += " Cannot be switched off."
    if rule.default is not None:
        text += f' Built-in default: "{rule.default}".'
    return text
