"""Every setting the server reads, and how client-sent settings become a `Settings` value.

`SETTINGS` is the single list of record: the VS Code extension's `package.json`
(`contributes.configuration`) is tested against it, so add a key here first.
Settings arrive in three shapes, all accepted by `parse_settings`:
  - `initializationOptions`: `{"target": ...}` or `{"fusionSwitch": {"target": ...}}`;
  - `workspace/configuration` for section `fusionSwitch`: `{"target": ..., "catalogue": {...}}`;
  - `workspace/didChangeConfiguration`: `{"fusionSwitch": {...}}` (or the flat form).
Dotted keys (`{"catalogue.extraFiles": [...]}`, as some clients send them) are expanded too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..workflow.sizes import parse_size

SECTION = "fusionSwitch"

SETTINGS: dict[str, dict[str, Any]] = {
    "fusionSwitch.target": {
        "type": "string",
        "default": "",
        "description": (
            "The device the configuration is for: a --soc_version such as Ascend950PR_9599 or a "
            "product name such as Atlas 350. Empty means no target-specific checks."
        ),
    },
    "fusionSwitch.catalogue.extraFiles": {
        "type": "array",
        "default": [],
        "description": (
            "Extra rule catalogues layered over the built-in one: fusion-switch catalogue "
            "JSON files or CANN fusion_config.json files from a toolkit install. "
            "Later files win."
        ),
    },
    "fusionSwitch.compare.onDump": {
        "type": "string",
        "default": "",
        "description": "Folder of the operator dump taken with fusion on.",
    },
    "fusionSwitch.compare.offDump": {
        "type": "string",
        "default": "",
        "description": "Folder of the operator dump taken with fusion off.",
    },
    "fusionSwitch.compare.onGraph": {
        "type": "string",
        "default": "",
        "description": "Graph of the fusion-on build (atc JSON or ge_proto_*_Build.txt).",
    },
    "fusionSwitch.compare.offGraph": {
        "type": "string",
        "default": "",
        "description": "Graph of the fusion-off build (atc JSON or ge_proto_*_Build.txt).",
    },
    "fusionSwitch.compare.output": {
        "type": "string",
        "default": "",
        "description": "Folder for the comparison results (CSV, JSON summary, HTML report).",
    },
    "fusionSwitch.compare.memoryBudget": {
        "type": "string",
        "default": "",
        "description": (
            "Memory the comparison's workers and its replay may use together, such as 4G or "
            "512M (compare --memory-budget). Empty means no limit."
        ),
    },
    "fusionSwitch.compare.workers": {
        "type": "integer",
        "default": 0,
        "minimum": 0,
        "description": (
            "Processes that compare the tensors, the comparing process included (compare "
            "--workers). 0 means one per core."
        ),
    },
    "fusionSwitch.compare.rank": {
        "type": "string",
        "default": "",
        "description": (
            "Rank to compare when the dump folders hold several (compare --rank): a device id "
            "such as 0, or the folders above the time folder and the device id such as node0/0 "
            "(two servers' device 0), as fusion-switch dumps lists them. Empty: the only one "
            "there. The editor compares one rank at a time: --rank all is for the command line."
        ),
    },
    "fusionSwitch.compare.iteration": {
        "type": "string",
        "default": "",
        "description": (
            "Iteration to compare when the dump folders hold several (compare --iteration); "
            "all compares every iteration of statistics dumps. Empty: the only one there."
        ),
    },
    "fusionSwitch.compare.step": {
        "type": "string",
        "default": "",
        "description": (
            "Training step to compare when the dump folders hold step folders above the time "
            "folders (compare --step; MindSpore O2 {step_id}/, msprobe step{N}/): 1 or step1, "
            "the same step on both sides. Empty: the only one there."
        ),
    },
    "fusionSwitch.trace.server": {
        "type": "string",
        "enum": ["off", "messages", "verbose"],
        "default": "off",
        "description": "Trace the messages between the editor and the server (read by the client).",
        "client_only": True,
    },
}


@dataclass(frozen=True)
class CompareSettings:
    on_dump: str = ""
    off_dump: str = ""
    on_graph: str = ""
    off_graph: str = ""
    output: str = ""
    memory_budget: str = ""  # as typed (4G); checked when read, passed to compare as it is
    workers: int = 0  # 0: one per core (compare's default)
    rank: str = ""  # --rank: 0 or node0/0 (folders, device id); empty: the only one there
    iteration: str = ""  # --iteration; empty: the only one there
    step: str = ""  # --step: a training step (1 or step1); empty: the only one there


@dataclass(frozen=True)
class Settings:
    target: str = ""
    extra_files: tuple[str, ...] = ()
    compare: CompareSettings = field(default_factory=CompareSettings)


def _expand_dotted(obj: dict) -> dict:
    """`{"catalogue.extraFiles": x}` → `{"catalogue": {"extraFiles": x}}`, recursively."""
    out: dict = {}
    for key, value in obj.items():
        if isinstance(value, dict):
            value = _expand_dotted(value)
        *parents, last = key.split(".") if isinstance(key, str) else [key]
        node = out
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        if isinstance(value, dict) and isinstance(node.get(last), dict):
            node[last] = {**node[last], **value}
        else:
            node[last] = value
    return out


def _section(raw: Any) -> dict:
    """The `fusionSwitch` object out of any of the accepted shapes (empty when absent)."""
    if not isinstance(raw, dict):
        return {}
    raw = _expand_dotted(raw)
    inner = raw.get(SECTION)
    return inner if isinstance(inner, dict) else raw


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Read settings from a client payload. Keys that are absent keep `base`'s value.

    Returns the settings and a list of problems (wrong types), each naming the key, so the
    server can log them; a bad value never raises and never clears a good one.
    """
    base = base or Settings()
    section = _section(raw)
    problems: list[str] = []

    def text(obj: dict, key: str, name: str, current: str) -> str:
        if key not in obj or obj[key] is None:
            return current
        if isinstance(obj[key], str):
            return obj[key].strip()
        problems.append(f"{name} must be a string, got {type(obj[key]).__name__}; ignored")
        return current

    def size(obj: dict, key: str, current: str) -> str:
        name = f"fusionSwitch.compare.{key}"
        value = text(obj, key, name, current)
        if value and value != current:
            try:
                parse_size(value)
            except ValueError as error:
                problems.append(f"{name}: {error}; ignored")
                return current
        return value

    def count(obj: dict, key: str, current: int) -> int:
        """A whole number >= 0; also as a string, and "" as 0 (Emacs sends "" when unset)."""
        if key not in obj or obj[key] is None:
            return current
        value = obj[key]
        if isinstance(value, str) and (value.strip().isdecimal() or not value.strip()):
            return int(value.strip() or 0)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        problems.append(
            f"fusionSwitch.compare.{key} must be 0 (every core) or a number of processes, "
            f"got {value!r}; ignored"
        )
        return current

    def choice(obj: dict, key: str, current: str) -> str:
        """A rank, iteration or step, typed as text or as a number (Helix's TOML, Emacs)."""
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return str(value)
        return text(obj, key, f"fusionSwitch.compare.{key}", current)

    target = text(section, "target", "fusionSwitch.target", base.target)

    extra_files = base.extra_files
    catalogue = section.get("catalogue")
    if isinstance(catalogue, dict) and catalogue.get("extraFiles") is not None:
        files = catalogue["extraFiles"]
        if isinstance(files, str):
            files = [files]
        if isinstance(files, list) and all(isinstance(f, str) for f in files):
            extra_files = tuple(f for f in (x.strip() for x in files) if f)
        else:
            problems.append("fusionSwitch.catalogue.extraFiles must be a list of paths; ignored")
    elif catalogue is not None and not isinstance(catalogue, dict):
        problems.append("fusionSwitch.catalogue must be an object; ignored")

    compare = base.compare
    cmp_raw = section.get("compare")
    if isinstance(cmp_raw, dict):
        compare = CompareSettings(
            on_dump=text(cmp_raw, "onDump", "fusionSwitch.compare.onDump", compare.on_dump),
            off_dump=text(cmp_raw, "offDump", "fusionSwitch.compare.offDump", compare.off_dump),
            on_graph=text(cmp_raw, "onGraph", "fusionSwitch.compare.onGraph", compare.on_graph),
            off_graph=text(cmp_raw, "offGraph", "fusionSwitch.compare.offGraph", compare.off_graph),
            output=text(cmp_raw, "output", "fusionSwitch.compare.output", compare.output),
            memory_budget=size(cmp_raw, "memoryBudget", compare.memory_budget),
            workers=count(cmp_raw, "workers", compare.workers),
            rank=choice(cmp_raw, "rank", compare.rank),
            iteration=choice(cmp_raw, "iteration", compare.iteration),
            step=choice(cmp_raw, "step", compare.step),
        )
    elif cmp_raw is not None:
        problems.append("fusionSwitch.compare must be an object; ignored")

    return Settings(target=target, extra_files=extra_files, compare=compare), problems
