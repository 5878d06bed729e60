"""The rule catalogue of the user's own CANN install: its built-in ``fusion_config.json``.

A CANN version knows rules that fusion-switch's built-in catalogue (gathered from public
sources) may lack. Their names are in the install's ``fusion_config.json`` (``Switch`` with the
default of each listed rule, ``Priority`` with every rule CANN orders). Rules found there and
missing from the built-in catalogue become known, with the file as their source (shown in hover);
rules both know keep the built-in facts. The install is found from a setting, then
``ASCEND_OPP_PATH``, ``ASCEND_HOME_PATH`` / ``ASCEND_TOOLKIT_HOME``, then the usual locations
(``/usr/local/Ascend``, ``~/Ascend``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .extra import CatalogueError, load_extra_file
from .rules import SECTIONS, Catalogue, builtin_catalogue

CONFIG_NAME = "fusion_config.json"
# where fusion_config.json sits below an ASCEND_OPP_PATH / a toolkit home / an install root
BELOW_OPP = ("built-in/fusion_pass/config",)
BELOW_HOME = (
    "opp/built-in/fusion_pass/config",
    "lib64/plugin/opskernel/fusion_pass/config",
    "*/lib64/plugin/opskernel/fusion_pass/config",
)
BELOW_ROOT = tuple(
    f"{top}/{below}"
    for top in ("ascend-toolkit/latest", "latest", "cann", "ascend-toolkit/*")
    for below in BELOW_HOME
)
USUAL_ROOTS = ("/usr/local/Ascend", "~/Ascend")
_VERSION = re.compile(r"^\s*(?:Version|version)\s*=\s*(\S+)", re.MULTILINE)


@dataclass
class CannCatalogue:
    """What was found: the config files read, the rules they add, and how the install was found
    (``found_by``: the setting, an environment variable, or a usual location)."""

    files: list[Path] = field(default_factory=list)
    found_by: str = ""
    version: str | None = None
    added: Catalogue = field(default_factory=Catalogue)
    errors: list[CatalogueError] = field(default_factory=list)

    @property
    def label(self) -> str:
        if not self.files:
            return "no CANN install found"
        version = f"CANN {self.version}" if self.version else "CANN (version unknown)"
        return f"{version}: {len(self.added)} rules from {self.files[0]} ({self.found_by})"


_SETTING = "fusionSwitch.catalogue.extraFiles"  # a folder there is the install to read


def _is(path: Path, kind: str) -> bool | None:
    """``path.is_dir()`` / ``is_file()``, None where the user may not look (a CANN install
    under its own user's 750 folder raised PermissionError out of every command)."""
    try:
        return path.is_dir() if kind == "dir" else path.is_file()
    except OSError:
        return None


def _configs_below(base: Path, patterns: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for pattern in patterns:
        try:
            found += sorted(p for p in base.glob(f"{pattern}/{CONFIG_NAME}") if _is(p, "file"))
        except OSError:
            continue
    return list(dict.fromkeys(found))


def find_cann_configs(
    setting: str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[list[Path], str]:
    """(fusion_config.json files, how they were found) for the first place that has any."""
    env = os.environ if environ is None else environ
    places: list[tuple[Path, tuple[str, ...], str]] = []
    if setting:
        p = Path(setting).expanduser()
        if _is(p, "file"):
            return [p], _SETTING
        below = ("", *BELOW_OPP, *BELOW_HOME, *BELOW_ROOT)
        places.append((p, below, _SETTING))
    if env.get("ASCEND_OPP_PATH"):
        places.append((Path(env["ASCEND_OPP_PATH"]), BELOW_OPP, "ASCEND_OPP_PATH"))
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        if env.get(var):
            places.append((Path(env[var]), BELOW_HOME, var))
    for root in USUAL_ROOTS:
        places.append((Path(root).expanduser(), BELOW_ROOT, f"usual location {root}"))
    for base, patterns, how in places:
        if _is(base, "dir"):
            found = _configs_below(base, tuple(p.strip("/") or "." for p in patterns))
            if found:
                return found, f"{how} = {base}" if not how.startswith("usual") else how
    return [], ""


def _version_near(config: Path) -> str | None:
    """The CANN version from a version.cfg / *install.info above the config file, if any."""
    for folder in list(config.parents)[:8]:
        for name in ("version.cfg", "ascend_toolkit_install.info", "version.info"):
            candidate = folder / name
            if candidate.is_file():
                try:
                    m = _VERSION.search(candidate.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    continue
                if m:
                    return m.group(1)
    return None


def cann_catalogue(
    setting: str | None = None,
    environ: Mapping[str, str] | None = None,
    base: Catalogue | None = None,
) -> CannCatalogue:
    """The rules the user's CANN knows and ``base`` (default: the built-in catalogue) lacks."""
    base = base if base is not None else builtin_catalogue()
    files, how = find_cann_configs(setting, environ)
    result = CannCatalogue(files=files, found_by=how)
    if not files:
        if setting:
            found = (
                "cannot be read (permission denied?)"
                if _is(Path(setting).expanduser(), "dir") is None
                else f"no {CONFIG_NAME} found here"
            )
            result.errors.append(
                CatalogueError(
                    setting,
                    f"{found} (expected .../opp/built-in/fusion_pass/config/{CONFIG_NAME}); "
                    f"fix that folder in {_SETTING} or --catalogue",
                )
            )
        return result
    result.version = _version_near(files[0])
    origin_version = f"CANN {result.version}" if result.version else "CANN install"
    added = Catalogue(origins=[])
    for path in files:
        found, error = load_extra_file(path)
        if error is not None:
            result.errors.append(error)
            continue
        for section in SECTIONS:
            for rule in found.rules[section].values():  # type: ignore[union-attr]
                if base.get(rule.name, section) is None and rule.name not in added.rules[section]:
                    added.add(_from_cann(rule, path, origin_version))
    added.origins = [f"{origin_version} ({how}): {len(added)} rules"] if len(added) else []
    result.added = added
    return result


def _from_cann(rule, path: Path, origin: str):
    from dataclasses import replace

    return replace(
        rule,
        description=(
            f"Known to this {origin} ({path}) and not to fusion-switch's built-in catalogue: "
            "no description."
        ),
        source=str(path),
        origin=f"{origin} ({path})",
    )


def load_catalogue_with_cann(
    extra_files: list[str] | tuple[str, ...] = (), environ: Mapping[str, str] | None = None
) -> tuple[Catalogue, list[CatalogueError], CannCatalogue]:
    """The catalogue in force: built-in, plus the rules of the user's CANN, plus extra files.

    A folder among ``extra_files`` (the ``fusionSwitch.catalogue.extraFiles`` setting) is taken
    as the CANN install to read, before the environment and the usual locations."""
    from .extra import load_catalogue

    folders = [f for f in extra_files if _is(Path(f).expanduser(), "dir") is not False]
    files = [f for f in extra_files if f not in folders]
    cann = cann_catalogue(folders[0] if folders else None, environ)
    base = builtin_catalogue()
    if len(cann.added):
        base = base.merged(cann.added)
    catalogue, errors = load_catalogue(files, base=base)
    return catalogue, [*cann.errors, *errors], cann
