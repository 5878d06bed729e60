"""Reading a script for the lines that make a framework read a fusion_switch.cfg (the table of
frameworks is in wiring.py), and whether each names this configuration.

A line counts only where the framework's own API takes it (a review: loose markers tried on
every script counted `python train.py --fusion_switch_file=...`, a MindSpore
`set_context(fusion_switch_file=...)` and `export FUSION_SWITCH_FILE=...` as wired): a key of
TF1's `parameter_map` or a keyword of `NPURunConfig(...)`, an attribute of TF2's
`global_options()`, TorchAir's `fusion_config`, a GE option map, a command line that starts
with atc / aoe / msit. The option given to any other command is an argument to the user's own
script: reported apart (`find_forwarded`), as not wired.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .trials import CFG_VARIABLE
from .wiring import COMMAND, CPP, Wiring

RELATIVE = "relative to the job's working directory; use an absolute path"
TILDE = (
    "'~' is not expanded here ({where}): the framework looks for a folder named '~'; "
    "use the absolute path"
)
ENV_ONLY = (
    f"reads only {CFG_VARIABLE}: bisect sets it to each trial's copy; anywhere else set it to "
    "this file, or give this file as the fallback"
)
_VARIABLE = re.escape(CFG_VARIABLE)
ENV_FALLBACK = re.compile(  # os.environ.get("V", x), os.getenv("V", x), ${V:-x}
    rf"""(?:environ\.get|getenv)\(\s*["']{_VARIABLE}["']\s*,|\$\{{{_VARIABLE}:?-"""
)
ENV_BARE = re.compile(  # os.environ["V"], os.environ.get("V"), getenv("V"), ${V}, $V
    rf"""environ\s*\[\s*["']{_VARIABLE}["']\s*\]|(?:environ\.get|getenv)\(\s*["']{_VARIABLE}["']\s*\)"""
    rf"""|\$\{{{_VARIABLE}\}}|\${_VARIABLE}\b"""
)
FORWARD_FLAG = re.compile(r"--fusion[_-]switch[_-]file(?:=\S|\s+(?=[^\s\"',)\]]))")
# words before the command itself: wrappers and shell keywords
WRAPPERS = ("exec", "nohup", "sudo", "time", "env", "command", "xargs", "then", "do", "else", "!")
MAX_STATEMENT_LINES = 12


@dataclass(frozen=True)
class Finding:
    line: int
    text: str
    names_this_cfg: bool
    note: str = ""  # why a path is not this configuration, or a warning about it


@dataclass(frozen=True)
class Forwarded:
    """The option given to a command that is none of the frameworks: the user's own script."""

    line: int
    text: str
    command: str
    names_this_cfg: bool


def strip_comment(line: str, kind: str) -> str:
    """The code of a line: without a `#` comment (a `//` one in C++, where `#` starts a
    preprocessor line), quotes respected."""
    if kind == CPP:
        if line.lstrip().startswith("#"):
            return ""
        marker = "//"
    else:
        marker = "#"
    quote, i = "", 0
    while i < len(line):
        char = line[i]
        if quote:
            if char == "\\":
                i += 1  # an escaped character
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif line.startswith(marker, i) and (marker == "//" or i == 0 or line[i - 1] in " \t;"):
            return line[:i]
        i += 1
    return line


def _depth(text: str) -> int:
    """Brackets opened and not closed in ``text`` (string literals skipped)."""
    depth, quote = 0, ""
    for i, char in enumerate(text):
        if quote:
            if char == quote and text[i - 1] != "\\":
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
    return depth


def _statement(code: list[str], index: int) -> str:
    """The line at ``index`` and the lines its open brackets (or a trailing backslash) carry
    on to: the value of a wrapped call is on them."""
    text = code[index]
    end = index
    while end + 1 < len(code) and end - index < MAX_STATEMENT_LINES:
        if _depth(text) <= 0 and not text.rstrip().endswith("\\"):
            break
        end += 1
        text += "\n" + code[end]
    return text


def _enclosing_call(joined: str, position: int) -> str:
    """The name of the call whose parentheses hold ``position`` ("" if none)."""
    depth = 0
    for i in range(position - 1, -1, -1):
        char = joined[i]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth:
                depth -= 1
                continue
            if char != "(":
                return ""
            name = re.search(r"([\w.]+)\s*$", joined[:i])
            return name.group(1).rsplit(".", 1)[-1] if name else ""
    return ""


def _code_marks(wiring: Wiring, code: list[str]) -> list[int]:
    """Indices of the lines of ``code`` where the framework's API takes the option."""
    joined = "\n".join(code)
    if wiring.needs and not re.search(wiring.needs, joined):
        return []
    marker = re.compile(wiring.marker)
    owners = set()
    if wiring.owner:
        binding = re.compile(r"^\s*(\w+)\s*=\s*[\w.]*" + re.escape(wiring.owner) + r"\(\)\s*$")
        owners = {m.group(1) for line in code if (m := binding.match(line))}
    attribute = re.compile(r"\b(\w+)\s*\.\s*" + re.escape(wiring.option) + r"\s*=(?!=)")
    keyword = re.compile(r"(?<![\w.])" + re.escape(wiring.option) + r"\s*=(?!=)")
    marks, offset = [], 0
    for index, line in enumerate(code):
        if marker.search(line):
            marks.append(index)
        elif owners and any(m.group(1) in owners for m in attribute.finditer(line)):
            marks.append(index)  # opts = npu.global_options(); opts.fusion_switch_file = ...
        elif wiring.call and any(
            _enclosing_call(joined, offset + m.start()) == wiring.call
            for m in keyword.finditer(line)
        ):
            marks.append(index)  # NPURunConfig(..., fusion_switch_file=...), however wrapped
        offset += len(line) + 1
    return marks


def _segments(code: list[str]) -> list[tuple[int, str]]:
    """Simple commands of a shell script (or of command strings in a Python one) with the line
    each starts on: continuation lines joined, split at ; && || | outside quotes."""
    out: list[tuple[int, str]] = []
    index = 0
    while index < len(code):
        start, text = index, code[index]
        while text.rstrip().endswith("\\") and index + 1 < len(code):
            index += 1
            text = text.rstrip()[:-1] + " " + code[index]
        index += 1
        quote, begin = "", 0
        i = 0
        while i < len(text):
            char = text[i]
            if quote:
                if char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char in ";|&" and text[i - 1 : i] not in "<>" and text[i + 1 : i + 2] != ">":
                out.append((start, text[begin:i]))
                while i + 1 < len(text) and text[i + 1] in ";|&":
                    i += 1
                begin = i + 1
            i += 1
        out.append((start, text[begin:]))
    return [(start, segment) for start, segment in out if segment.strip()]


PYTHON_RUN = re.compile(
    r"\b(?:run|call|check_call|check_output|Popen|system|popen|spawn\w*|exec\w*)\s*\(\s*(.*)"
)


def _words(segment: str) -> list[str]:
    """The words of a simple command, env assignments and wrappers (sudo, nohup, ...) dropped;
    for a command run from Python (subprocess.run([...]), os.system("...")), its words."""
    run = PYTHON_RUN.search(segment)
    if run:
        body = run.group(1).strip()
        if body.startswith("["):
            items = [
                "python" if "executable" in item else item.strip().strip("\"'")
                for item in re.split(r",\s*", body[1:].split("]", 1)[0])
            ]
        elif body[:1] in "\"'":
            items = re.findall(r"\S+", body[1:].split(body[0], 1)[0])
        else:
            items = []
    else:
        items = [w.strip("\"'") for w in re.findall(r"\"[^\"]*\"|'[^']*'|\S+", segment)]
    words = []
    for item in items:
        item = item.lstrip("({`") if not words else item
        if item and (words or not (re.match(r"\w+=", item) or item in WRAPPERS)):
            words.append(item)
    return words


def _command_findings(wiring: Wiring, code: list[str], cfg_path: str) -> list[Finding]:
    flag = re.compile("|".join(re.escape(f) + r"(?=[=\s\"'])" for f in wiring.flags))
    out = []
    for start, segment in _segments(code):
        words = _words(segment)
        if not words or os.path.basename(words[0]) != wiring.command:
            continue
        for match in flag.finditer(segment):
            value = re.split(r"\s+--?\w", segment[match.end() :], maxsplit=1)[0]
            line = next((i for i in range(start, len(code)) if match.group() in code[i]), start)
            this, note = names_this(value, cfg_path, shell=True)
            out.append(Finding(line + 1, code[line].strip(), this, note))
    return out


def find_wiring(wiring: Wiring, script: str, cfg_path: str) -> list[Finding]:
    """Lines of `script` where the framework's API takes the option, and whether each names
    this configuration (its absolute path or its file name; a variable holding the path is
    not followed)."""
    lines = script.splitlines()
    code = [strip_comment(line, wiring.kind) for line in lines]
    if wiring.kind == COMMAND:
        return _command_findings(wiring, code, cfg_path)
    out = []
    for index in _code_marks(wiring, code):
        this, note = names_this(_statement(code, index), cfg_path)
        out.append(Finding(index + 1, lines[index].strip(), this, note))
    return out


def find_forwarded(script: str, cfg_path: str, frameworks: tuple[str, ...]) -> list[Forwarded]:
    """`--fusion_switch_file` given to a command that is none of ``frameworks`` (atc, aoe,
    msit): an argument to the user's own script, which has to forward it."""
    code = [strip_comment(line, COMMAND) for line in script.splitlines()]
    out = []
    for start, segment in _segments(code):
        match = FORWARD_FLAG.search(segment)
        words = _words(segment)
        if not match or not words or os.path.basename(words[0]) in frameworks:
            continue
        line = next((i for i in range(start, len(code)) if FORWARD_FLAG.search(code[i])), start)
        command = " ".join(w.split()[0] for w in words[:2] if not w.startswith("-"))
        this, _ = names_this(segment[match.start() :], cfg_path, shell=True)
        out.append(Forwarded(line + 1, code[line].strip(), command, this))
    return out


def names_this(code: str, cfg_path: str, shell: bool = False) -> tuple[bool, str]:
    """Whether a path in ``code`` is this configuration, and a note: its absolute path, or a
    relative one its path ends with. A file of the same name elsewhere is not (a review:
    "/data/old_experiment/fusion_switch.cfg" passed as this configuration), nor "~/name":
    nothing expands "~" in a Python string or after "--option=" (a review), only a shell
    does, in a word of its own (``shell``). A relative path is recognised, with a warning:
    it resolves against the job's working directory (a review: `cd device$i` per rank).
    FUSION_SWITCH_CFG (bisect sets it to each trial's copy) with this file as its fallback is
    this file; without a fallback, it is, with a warning."""
    name = cfg_path.replace("\\", "/").rsplit("/", 1)[-1]
    if re.search(r"(?<![\w.~])(?<!\w-)" + re.escape(cfg_path) + r"(?![\w.-])", code):
        return True, ""
    if re.search(r"\$(\(\s*pwd\s*\)|\{PWD\}|PWD\b)[/\\]+" + re.escape(name), code):
        return True, RELATIVE  # $(pwd)/name, $PWD/name: the job's working directory
    if re.search(r"\$(\{\w+\}|\w+)[/\\]+" + re.escape(name), code):
        return True, ""  # ${DIR}/name, $DIR/name: not followed, may be this file
    ours = os.path.normpath(cfg_path).replace("\\", "/")
    tilde = ""
    for match in re.finditer(r"[^\s\"'=,(){}\[\]]*" + re.escape(name) + r"(?![\w.-])", code):
        path = match.group().replace("\\", "/")
        before = code[: match.start()]
        if path.startswith("~"):
            expanded = (shell and (not before or before[-1] in " \t")) or re.search(
                r"expanduser\(\s*[rf]?[\"']$", before
            )
            if os.path.normpath(os.path.expanduser(path)).replace("\\", "/") == ours:
                if expanded:
                    return True, ""
                where = "after '='" if before.endswith("=") else "in a string"
                tilde = TILDE.format(where=where)
        elif path.startswith("/") or re.match(r"[A-Za-z]:/", path):
            if os.path.normpath(path).replace("\\", "/") == ours:
                return True, ""
        elif path != name and not path.startswith("./") and "/" not in path:
            continue  # another name ending with it: "my_fusion_switch.cfg"
        else:
            relative = os.path.normpath(path)
            if relative == name or ours.endswith("/" + relative):
                return True, RELATIVE  # a review: ranks run in folders of their own
    if not ENV_FALLBACK.search(code) and ENV_BARE.search(code):
        return True, ENV_ONLY  # bisect's trial copy; unset outside a bisection
    return False, tilde


GE_ONLY = "no CANN graph or UB fusion happens without GE, so the fusion switch file is ignored"
MS_GE_BACKEND = re.compile(r"""\bbackend\s*=\s*["']GE["']""")
MS_O2 = re.compile(r"""["']?jit_level["']?\s*[:=]\s*["']O2["']""")
MS_GRAPH = re.compile(r"\bGRAPH_MODE\b|\bmode\s*=\s*0\b")
MS_PYNATIVE = re.compile(r"\bPYNATIVE_MODE\b")
TORCHAIR_MODES = re.compile(r"""["'](reduce-overhead)["']|\b(npugraph_ex)\b""")


def caveats(wiring: Wiring, script: str) -> list[str]:
    """Why the option, though passed, may not take effect in this script (wire --check exits 1,
    doctor reports a problem, each with the wiring's note: how to confirm)."""
    code = "\n".join(strip_comment(line, wiring.kind) for line in script.splitlines())
    out = []
    if wiring.name == "mindspore" and not MS_GE_BACKEND.search(code):
        # a review: the printed set_context alone, in MindSpore's default PYNATIVE_MODE
        if MS_PYNATIVE.search(code):
            out.append(
                "the script sets PYNATIVE_MODE: ge_options reach GE only in GRAPH_MODE at "
                'jit_level O2 (MindSpore 2.3 to 2.6) or in a step compiled with jit(backend="GE") '
                f"(2.7 and later); {GE_ONLY}"
            )
        elif not (MS_GRAPH.search(code) and MS_O2.search(code)):
            missing = " and no ".join(
                what
                for what, found in (("GRAPH_MODE", MS_GRAPH), ('jit_level "O2"', MS_O2))
                if not found.search(code)
            )
            out.append(
                f'the script shows no {missing} and no jit(backend="GE"): PYNATIVE_MODE is '
                "MindSpore's default mode, and from 2.7 the default backend on Atlas A2 and "
                f"later is ms_backend; {GE_ONLY}"
            )
    modes = dict.fromkeys(m.group(1) or m.group(2) for m in TORCHAIR_MODES.finditer(code))
    if wiring.name == "torchair" and modes:
        # a review: compiler_config.py lists fusion_config.fusion_switch_file among the options
        # that "may not take effect or report error" outside the max-autotune (GE graph) mode
        out.append(
            f"the script uses {' and '.join(modes)}: fusion_config.fusion_switch_file may not "
            "take effect there (Ascend/torchair python/torchair/configs/compiler_config.py, "
            "unsupport_aclgraphconfig_list)"
        )
    return out


OVERRIDE = re.compile(r"\boptimization_switch\b|\bge\.optimizationSwitch\b|\bOPTIMIZATION_SWITCH\b")
OVERRIDE_RULE = re.compile(r"\b([A-Za-z_]\w*)\s*:\s*(?:on|off)\b")
OVERRIDE_SOURCE = (
    "hicann/ge docs/zh/api/graph_engine_api/cpp/ge/options_params/"
    "operator_and_graph_compilation.md, ge.optimizationSwitch"
)


@dataclass(frozen=True)
class Override:
    """A line that sets optimization_switch (ge.optimizationSwitch): for a rule it names, it
    wins over the fusion switch file (GE's documentation), whatever the cfg says."""

    line: int
    text: str
    rules: tuple[str, ...]  # the rules named, when the value is written out

    def warning(self) -> str:
        named = f" ({', '.join(self.rules)})" if self.rules else ""
        return (
            f"sets optimization_switch{named}: for every rule it names it wins over the cfg "
            f"({OVERRIDE_SOURCE})"
        )


def find_overrides(script: str, kind: str) -> list[Override]:
    """Lines that set optimization_switch: TF1's parameter_map / NPURunConfig, TF2's
    global_options, TorchAir's ge_config, GE's ge.optimizationSwitch, atc's
    --optimization_switch (a review: nothing warned that it overrides the cfg)."""
    lines = script.splitlines()
    code = [strip_comment(line, kind) for line in lines]
    out = []
    for index, line in enumerate(code):
        if OVERRIDE.search(line):
            statement = _statement(code, index)
            rules = tuple(dict.fromkeys(OVERRIDE_RULE.findall(statement)))
            out.append(Override(index + 1, lines[index].strip(), rules))
    return out
