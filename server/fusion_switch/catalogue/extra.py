"""Extra catalogue files: our own format (validated by schemas/catalogue.schema.json) or a
CANN `fusion_config.json` from a toolkit install, whose Switch entries become rules with their
defaults."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from .rules import SCHEMAS_DIR, SECTIONS, Catalogue, Rule, builtin_catalogue, catalogue_from_json

if TYPE_CHECKING:
    import jsonschema


# The most of a file read as a catalogue. The built-in one is ~0.7 MB and CANN's
# fusion_config.json smaller: what is larger is not a catalogue, and reading it whole (a
# review: /dev/zero named in the setting grew the server to 24 GB until the kernel killed it)
# is refused.
MAX_CATALOGUE_BYTES = 32 << 20
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_NOT_REGULAR = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)
_WHAT_TO_DO = "name a catalogue JSON file in fusionSwitch.catalogue.extraFiles (or --catalogue)"


@dataclass(frozen=True)
class CatalogueError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@cache
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema  # imported on first use: it costs ~50 ms of server start-up

    schema = json.loads((SCHEMAS_DIR / "catalogue.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _fusion_config_problem(data: dict) -> str | None:
    """What in a CANN fusion_config.json is not of the type CANN's own file has (a number
    raised TypeError, a string was read as one rule per letter)."""
    for key in ("Switch", "Priority"):
        if key in data and not isinstance(data[key], dict):
            return f'"{key}" is {type(data[key]).__name__}, expected an object'
    exceptional = data.get("ExceptionalPassOfO1Level")
    if exceptional is not None and not (
        isinstance(exceptional, list) and all(isinstance(n, str) for n in exceptional)
    ):
        return '"ExceptionalPassOfO1Level" is not a list of rule names'
    return None


def _from_fusion_config(data: dict, origin: str) -> Catalogue:
    cat = Catalogue(origins=[origin])
    switch = data.get("Switch", {})
    for section in SECTIONS:
        entries = switch.get(section, {}) if isinstance(switch, dict) else {}
        if not isinstance(entries, dict):
            continue
        for name, value in entries.items():
            if name == "ALL":
                continue
            default = value if value in ("on", "off") else None
            cat.add(
                Rule(
                    name=name,
                    section=section,
                    description=f"Listed in the CANN built-in configuration {origin}.",
                    registration="built-in fusion_config.json",
                    default=default,
                    origin=origin,
                )
            )
    priority = data.get("Priority", {})
    for section in SECTIONS:  # rules CANN orders but does not list under Switch (default on)
        stages = priority.get(section, {}) if isinstance(priority, dict) else {}
        for stage in stages.values() if isinstance(stages, dict) else ():
            for name in stage if isinstance(stage, dict) else ():
                if name != "ALL" and name not in cat.rules[section]:
                    cat.add(
                        Rule(
                            name=name,
                            section=section,
                            description=f"Given a priority in the CANN configuration {origin}.",
                            registration="built-in fusion_config.json (Priority)",
                            origin=origin,
                        )
                    )
    for name in data.get("ExceptionalPassOfO1Level", []) or []:
        if not isinstance(name, str):
            continue
        listed = [cat.rules[s][name] for s in SECTIONS if name in cat.rules[s]]
        for rule in listed:  # FE turns it on whatever its switch says: marked where it is too
            cat.add(replace(rule, o1_exceptional=True))
        if not listed:
            cat.add(Rule(name=name, section="GraphFusion", o1_exceptional=True, origin=origin))
    return cat


class _Refused(Exception):
    """A file not read as a catalogue; the message says why and what to do."""


def _refuse_unless_catalogue_sized(info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _NOT_REGULAR if test(info.st_mode)), "a special file")
        raise _Refused(f"{kind}, not a regular file: not read; {_WHAT_TO_DO}")
    if info.st_size > MAX_CATALOGUE_BYTES:
        raise _Refused(_too_large(f"{info.st_size / (1 << 20):.1f} MiB"))


def _too_large(size: str) -> str:
    return (
        f"{size}, more than the {MAX_CATALOGUE_BYTES >> 20} MiB a catalogue may have: not "
        f"read; {_WHAT_TO_DO}"
    )


def _read_catalogue_file(p: Path) -> str:
    """The text of ``p``, a regular file of at most `MAX_CATALOGUE_BYTES`; `_Refused` for
    anything else, which is never read: a FIFO blocks until a writer comes, a device such as
    /dev/zero never ends, /dev/stdin is the language server's own protocol stream.

    Checked before opening (opening some devices acts on them) and again on what was opened
    (the name may be another file by then); opened without waiting (O_NONBLOCK: a FIFO put
    there meanwhile is not waited for) and read up to one byte past the limit (a file that
    grows). Symbolic links are followed (a setting may name a link to a shared catalogue):
    the checks are of the file they lead to."""
    _refuse_unless_catalogue_sized(os.stat(p))
    fd = os.open(p, _READ_FLAGS)
    try:
        _refuse_unless_catalogue_sized(os.fstat(fd))
        chunks: list[bytes] = []
        left = MAX_CATALOGUE_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:
        raise _Refused(_too_large(f"it grew, while read, to over {MAX_CATALOGUE_BYTES} bytes"))
    return b"".join(chunks).decode("utf-8")


def load_extra_file(path: str | Path) -> tuple[Catalogue | None, CatalogueError | None]:
    """Read one extra catalogue; on any problem return one error naming the file, never raise."""
    p = Path(path).expanduser()
    try:
        text = _read_catalogue_file(p)
    except FileNotFoundError:
        return None, CatalogueError(
            str(p), "file not found; fix the path in fusionSwitch.catalogue.extraFiles"
        )
    except _Refused as refused:
        return None, CatalogueError(str(p), str(refused))
    except (OSError, UnicodeDecodeError) as exc:
        return None, CatalogueError(str(p), f"cannot read it ({exc})")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, CatalogueError(
            str(p), f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        )
    except RecursionError:
        return None, CatalogueError(str(p), "not a catalogue: arrays or objects nested too deep")
    keys = ("Switch", "Priority", "ExceptionalPassOfO1Level")
    if isinstance(data, dict) and any(k in data for k in keys) and "rules" not in data:
        problem = _fusion_config_problem(data)
        if problem:
            return None, CatalogueError(str(p), f"not a CANN fusion_config.json: {problem}")
        return _from_fusion_config(data, str(p)), None
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(data))
    if error is not None:
        where = "/".join(str(x) for x in error.absolute_path) or "top level"
        return None, CatalogueError(
            str(p),
            f"not a fusion-switch catalogue ({where}: {error.message}); expected "
            '{"rules": [{"name": ..., "section": "GraphFusion"|"UBFusion"}]} '
            "or a CANN fusion_config.json",
        )
    return catalogue_from_json(data, str(p)), None


def load_catalogue(
    extra_files: list[str] | tuple[str, ...] = (), base: Catalogue | None = None
) -> tuple[Catalogue, list[CatalogueError]]:
    """The built-in catalogue with extra files layered on top in order (later files win)."""
    cat = base if base is not None else builtin_catalogue()
    errors: list[CatalogueError] = []
    for path in extra_files:
        extra, error = load_extra_file(path)
        if error is not None:
            errors.append(error)
        elif extra is not None:
            cat = cat.merged(extra)
    return cat, errors
