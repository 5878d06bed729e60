"""What a user checks before a fusion investigation, as a list of checks: each one ok, problem
or info, with what was found and, for a problem, what to do.

Only reads: environment variables, files in the folder, installed package metadata, free disk.
Never starts the user's job or a device tool.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

OK, PROBLEM, INFO = "ok", "problem", "info"
CANN_HOME_VARS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH")
CANN_DEFAULT_HOMES = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann")
FRAMEWORKS = (
    "torch",
    "torch_npu",
    "torchair",
    "tensorflow",
    "npu_bridge",
    "npu_device",
    "mindspore",
    "mindspore_lite",
)
FULL_DUMP_GB = 50.0  # below this much free space a full dump of a real model often fails
SCRIPT_SUFFIXES = (".py", ".sh", ".ini", ".cpp", ".cc", ".txt")
DUMP_MARKERS = re.compile(
    r"enable_dump|dump_path|dump_config|dump_mode|MINDSPORE_DUMP_CONFIG|set_dump|acl\.json"
)


@dataclass(frozen=True)
class Check:
    status: str  # ok | problem | info
    topic: str
    detail: str
    fix: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def run_checks(folder: Path, target: str | None = None, cfg: Path | None = None) -> list[Check]:
    checks = [python_check(), *package_checks()]
    home = cann_home()
    checks.append(cann_check(home))
    checks.append(catalogue_check(home))
    checks.append(target_check(target))
    cfgs = [cfg] if cfg is not None else sorted(folder.glob("*.cfg"))
    scripts = _scripts(folder)
    checks.extend(cfg_checks(cfgs, scripts, folder))
    checks.extend(dump_checks(folder, scripts))
    checks.append(disk_check(folder))
    return checks


def python_check() -> Check:
    """The interpreter running fusion-switch (the package itself requires 3.11+)."""
    return Check(OK, "python", f"{platform.python_version()} at {sys.executable}")


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def package_checks() -> list[Check]:
    out = []
    for name in ("fusion-switch", "numpy", "pygls", "lsprotocol", "jsonschema"):
        version = _version(name)
        if version is None:
            out.append(
                Check(
                    PROBLEM,
                    name,
                    "not installed",
                    "reinstall fusion-switch: pip install fusion-switch",
                )
            )
        else:
            out.append(Check(OK, name, version))
    found = [f"{n} {v}" for n in FRAMEWORKS if (v := _version(n.replace("_", "-")) or _version(n))]
    out.append(
        Check(INFO, "frameworks", ", ".join(found) if found else "none installed in this Python")
    )
    return out


def cann_home() -> Path | None:
    for place in [os.environ.get(var) for var in CANN_HOME_VARS] + list(CANN_DEFAULT_HOMES):
        try:
            if place and Path(place).is_dir():
                return Path(place)
        except OSError:  # there, but this user may not look (cann_check says so)
            return Path(place)
    return None


def cann_version(home: Path) -> str | None:
    for name in ("version.cfg", "version.info", "compiler/version.info", "runtime/version.info"):
        path = home / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        match = re.search(r"(?:Version|version)\s*[=:]\s*([\w.\-]+)", text)
        if match:
            return match.group(1)
    return None


def cann_check(home: Path | None) -> Check:
    if home is None:
        return Check(
            PROBLEM,
            "CANN",
            "no CANN toolkit found ("
            + ", ".join(CANN_HOME_VARS)
            + " unset, nothing under "
            + " or ".join(CANN_DEFAULT_HOMES)
            + ")",
            "on the training machine: source /usr/local/Ascend/ascend-toolkit/set_env.sh",
        )
    try:
        os.listdir(home)
    except OSError as error:
        return Check(
            PROBLEM,
            "CANN",
            f"{home}: this user cannot read it ({error.strerror})",
            "run as the user CANN was installed for, or join its group (HwHiAiUser)",
        )
    version = cann_version(home)
    return Check(OK, "CANN", f"{home}" + (f" (version {version})" if version else ""))


def catalogue_check(home: Path | None) -> Check:
    """The catalogue in force, as `check` and the editor load it: built-in + the rules of the
    user's CANN install (catalogue.cann)."""
    from ..catalogue import builtin_catalogue
    from ..catalogue.cann import cann_catalogue

    builtin = len(builtin_catalogue())
    cann = cann_catalogue(environ=os.environ)
    if cann.errors:
        return Check(
            PROBLEM,
            "catalogue",
            "; ".join(str(e) for e in cann.errors),
            "the built-in catalogue is used instead",
        )
    if not cann.files:
        return Check(
            INFO,
            "catalogue",
            f"built-in ({builtin} rules); no CANN fusion_config.json found, so rules only your "
            "CANN version knows are reported as unknown",
            "set ASCEND_OPP_PATH / ASCEND_HOME_PATH (source set_env.sh) or pass the install "
            "folder with --catalogue",
        )
    return Check(OK, "catalogue", f"built-in ({builtin} rules) + {cann.label}")


def target_check(target: str | None) -> Check:
    from ..catalogue import known_target_names, resolve_target

    given = target
    if not given:
        return Check(
            INFO,
            "target",
            "unknown (no --target given): whether UB fusion applies depends on it",
            "give --target with your --soc_version (e.g. Ascend910B1, Ascend950PR_9599)",
        )
    resolved = resolve_target(given)
    if resolved is None:
        return Check(
            PROBLEM,
            "target",
            f"{given!r} is not a known product or soc_version",
            "one of: " + ", ".join(known_target_names()[:8]),
        )
    if not resolved.ub_fusion:
        return Check(
            INFO,
            "target",
            f"{resolved.label}: no UB fusion on this product; only GraphFusion entries matter",
            "drop the UBFusion section (the editor offers the fix)",
        )
    return Check(OK, "target", f"{resolved.label}: graph and UB fusion both apply")


def _scripts(folder: Path) -> list[Path]:
    out = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return out
    for path in entries:
        if path.suffix in SCRIPT_SUFFIXES and path.is_file() and path.stat().st_size < 2_000_000:
            out.append(path)
    return out


def cfg_checks(cfgs: list[Path], scripts: list[Path], folder: Path) -> list[Check]:
    from ..catalogue import builtin_catalogue
    from . import switching

    if not cfgs:
        return [
            Check(
                INFO,
                "cfg",
                f"no *.cfg in {folder}",
                "create one with: fusion-switch off fusion_switch.cfg --all (step 1 of the recipe)",
            )
        ]
    out = []
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in scripts}
    for cfg in cfgs:
        try:
            text = cfg.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            out.append(Check(PROBLEM, f"cfg {cfg.name}", f"cannot read: {exc}", ""))
            continue
        errors = switching.errors(text, builtin_catalogue())
        if errors:
            out.append(
                Check(
                    PROBLEM,
                    f"cfg {cfg.name}",
                    f"{len(errors)} error(s): {errors[0]}",
                    f"fusion-switch check {cfg}",
                )
            )
        else:
            out.append(Check(OK, f"cfg {cfg.name}", "valid (passes fusion-switch check)"))
        out.extend(wiring_checks(cfg, texts, folder))
    return out


def wiring_checks(cfg: Path, texts: dict[Path, str], folder: Path) -> list[Check]:
    """Whether a script here makes a framework read ``cfg``: each framework's API is looked for
    in the files it can be written in (wiring.SUFFIXES); the option given to another command
    is an argument to the user's script, not wiring; a wiring the script's mode defeats
    (MindSpore without GE, TorchAir's reduce-overhead) is a problem; optimization_switch,
    which wins over the cfg, is reported on a line of its own."""
    from .wiring import COMMANDS, CPP, PYTHON, SUFFIXES, WIRINGS
    from .wiring_scan import caveats, find_forwarded, find_overrides, find_wiring

    ours = str(cfg.resolve())
    wired, warnings, others, forwarded, defeated, overrides = [], [], [], [], {}, []
    for path, script in texts.items():
        for wiring in WIRINGS.values():
            if not wiring.supported or path.suffix not in SUFFIXES[wiring.kind]:
                continue
            found = find_wiring(wiring, script, ours)
            for f in found:
                where = f"{path.name}:{f.line}"
                if f.names_this_cfg:
                    wired.append(f"{where} ({wiring.name})")
                    warnings += [f"{where}: {f.note}"] if f.note else []
                elif f.note:
                    others.append(f"{where} ({wiring.name}): {f.note}")
            if any(f.names_this_cfg for f in found):
                for problem in caveats(wiring, script):
                    defeated.setdefault(wiring, []).append(f"{path.name}: {problem}")
        forwarded += [
            f"{path.name}:{f.line} passes it to your script ({f.command})"
            for f in find_forwarded(script, ours, COMMANDS)
            if f.names_this_cfg
        ]
        kind = CPP if path.suffix in SUFFIXES[CPP] else PYTHON
        overrides += [(path, o) for o in find_overrides(script, kind)]
    out = [wired_check(cfg, folder, wired, warnings, others, forwarded, defeated)]
    return out + ([override_check(cfg, overrides)] if overrides else [])


def wired_check(cfg, folder, wired, warnings, others, forwarded, defeated) -> Check:
    topic, ours, detail = f"wired {cfg.name}", cfg.resolve(), ", ".join(dict.fromkeys(wired))
    if defeated:
        reasons = [text for texts in defeated.values() for text in texts]
        notes = [wiring.note for wiring in defeated if wiring.note]
        name = next(iter(defeated)).name
        detail += ", but " + "; ".join(reasons + notes)
        return Check(PROBLEM, topic, detail, f"fusion-switch wire {name} {ours}")
    if wired and warnings:
        detail += "; " + "; ".join(dict.fromkeys(warnings))
        return Check(
            INFO, topic, detail, f"pass the absolute path: fusion-switch wire FRAMEWORK {ours}"
        )
    if wired:
        return Check(OK, topic, detail)
    detail = "; ".join([f"no script in {folder} passes {cfg.name} to a framework", *others])
    if forwarded:
        detail += "; " + ", ".join(forwarded) + ": check that it forwards it to the framework"
    fix = f"fusion-switch wire FRAMEWORK {cfg} (tf1, tf2, torchair, mindspore, atc, ...)"
    return Check(PROBLEM, topic, detail, fix)


def override_check(cfg: Path, overrides: list) -> Check:
    """optimization_switch wins over the cfg for every rule it names: a problem when one of
    them is a rule of the cfg, worth knowing otherwise (bisect switches rules the cfg does not
    name yet)."""
    rules = cfg_rules(cfg)
    clash = sorted({r for _, o in overrides for r in o.rules if r in rules})
    lines = "; ".join(f"{path.name}:{o.line} {o.warning()}" for path, o in overrides)
    if clash:
        return Check(
            PROBLEM,
            "optimization_switch",
            f"{lines}; it names {', '.join(clash)} of {cfg.name}",
            f"while you investigate with {cfg.name}, take {', '.join(clash)} out of "
            "optimization_switch",
        )
    return Check(
        INFO,
        "optimization_switch",
        f"{lines}; it names no rule of {cfg.name} (or its value is not written out)",
        "keep it free of the rules you switch in the cfg, bisect's candidates included",
    )


def cfg_rules(cfg: Path) -> set[str]:
    """The rule names a cfg switches (JSON, or the old `Name:on` lines)."""
    try:
        text = cfg.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    try:
        switch = json.loads(text).get("Switch", {})
        return {r for section in switch.values() if isinstance(section, dict) for r in section}
    except (ValueError, AttributeError, RecursionError):
        return set(re.findall(r"^\s*(\w+)\s*:\s*(?:on|off)\b", text, re.M))


def dump_checks(folder: Path, scripts: list[Path]) -> list[Check]:
    out = []
    acl = folder / "acl.json"
    if acl.is_file():
        try:
            dump = json.loads(acl.read_text(encoding="utf-8")).get("dump", {})
            detail = (
                f"acl.json: dump_path={dump.get('dump_path')!r}, dump_mode="
                f"{dump.get('dump_mode', 'output')!r}, dump_list "
                f"{'set' if dump.get('dump_list') is not None else 'missing'}"
            )
            fix = "" if dump.get("dump_path") else "set dump.dump_path in acl.json"
            out.append(Check(OK if not fix else PROBLEM, "dump", detail, fix))
        except (OSError, ValueError, AttributeError, RecursionError) as exc:
            out.append(
                Check(
                    PROBLEM,
                    "dump",
                    f"acl.json is not valid JSON: {exc}",
                    "fix acl.json (strict JSON)",
                )
            )
    found = []
    for path in scripts:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            if DUMP_MARKERS.search(line.split("#", 1)[0]):
                found.append(f"{path.name}:{number}")
    if found:
        out.append(Check(INFO, "dump options", "in " + ", ".join(found[:6])))
    if not out:
        out.append(
            Check(
                INFO,
                "dump",
                "no acl.json and no dump option in the scripts here",
                "needed only for compare (step 2): see the framework's dump options",
            )
        )
    return out


def disk_check(folder: Path) -> Check:
    try:
        usage = shutil.disk_usage(folder)
    except OSError as exc:
        return Check(PROBLEM, "disk", f"cannot measure free space in {folder}: {exc}")
    free = usage.free / 1e9
    detail = f"{free:.1f} GB free in {folder}"
    if free < FULL_DUMP_GB:
        return Check(
            PROBLEM,
            "disk",
            detail + f"; a full dump (fusion on and off) of a real model often needs more than "
            f"{FULL_DUMP_GB:.0f} GB",
            "dump to a bigger disk, or dump fewer steps (dump_step) / ops (dump_list)",
        )
    return Check(OK, "disk", detail)
