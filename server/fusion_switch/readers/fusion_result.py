"""``fusion_result.json``: which fusion rules matched and took effect, per session and graph.

CANN's graph compiler writes this file into the working directory. Its layout changed over the
versions, and all of them are still found in the wild (see ``samples/real/fusion_result/``):

``session_keyed``   ``{"session_and_graph_id_S_G": {"graph_fusion": {...}, "ub_fusion": {...}}}``
``record_list``     ``[{"graph_fusion": {...}, "session_and_graph_id": "S_G", ...}, ...]``
``record``          one such record
``record_stream``   several records written back to back (``}{``): not one JSON document
``graphId_record``  ``{"graphId": "G", "sessionId": "S", "graph_fusion": ..., "ub_fusion": ...}``
``graphId_stream``  several ``graphId`` records back to back

Each section maps a rule to ``{"match_times", "effect_times"[, "repository_hit_times"]}``, the
counts written as strings or numbers. ``effect_times`` > 0 means the rule changed the graph.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GRAPH_FUSION, UB_FUSION = "GraphFusion", "UBFusion"
SECTION_KEYS = (("graph_fusion", GRAPH_FUSION), ("ub_fusion", UB_FUSION))
SESSION_KEY_PREFIX = "session_and_graph_id_"
RECORD_KEYS = frozenset(
    {"graph_fusion", "ub_fusion", "session_and_graph_id", "graphId", "sessionId"}
)
LAYOUTS = (
    "session_keyed",
    "record_list",
    "record",
    "record_stream",
    "graphId_record",
    "graphId_stream",
    "empty",
)
WHAT_TO_PASS = "pass the fusion_result.json that CANN writes into the working directory of a run"


class FusionResultError(ValueError):
    """A file that cannot be read as fusion_result.json; the message names the file and why."""


@dataclass(frozen=True)
class FiredRule:
    """One rule's counts in one graph (``effect_times`` may be 0: matched but not applied)."""

    name: str
    section: str  # "GraphFusion" | "UBFusion"
    effect_times: int
    match_times: int | None
    repository_hit_times: int | None
    session: str
    graph: str


@dataclass(frozen=True)
class FusionResult:
    path: Path
    layout: str
    records: list[FiredRule] = field(default_factory=list)
    graph_ids: tuple[tuple[str, str], ...] = ()  # every (session, graph) the file names

    def totals(self) -> dict[tuple[str, str], int]:
        """(section, rule) -> effect_times summed over sessions and graphs."""
        out: dict[tuple[str, str], int] = {}
        for r in self.records:
            key = (r.section, r.name)
            out[key] = out.get(key, 0) + r.effect_times
        return out

    def match_totals(self) -> dict[tuple[str, str], int | None]:
        """(section, rule) -> match_times summed (None when no record of the rule has it)."""
        out: dict[tuple[str, str], int | None] = {}
        for r in self.records:
            key = (r.section, r.name)
            if r.match_times is None:
                out.setdefault(key, None)
            else:
                out[key] = (out.get(key) or 0) + r.match_times
        return out

    def fired(self) -> list[tuple[str, str]]:
        """(section, rule) that took effect at least once, sorted."""
        return sorted(key for key, n in self.totals().items() if n > 0)

    def graphs(self) -> list[tuple[str, str]]:
        """(session, graph) in file order, each once (graphs that list no rule included)."""
        return list(dict.fromkeys(self.graph_ids or [(r.session, r.graph) for r in self.records]))

    def section_of(self, rule: str) -> str | None:
        """The section the rule is listed in (the first one when it is listed in both)."""
        for r in self.records:
            if r.name == rule:
                return r.section
        return None


def read_fusion_result(path: str | os.PathLike) -> FusionResult:
    """Read any known layout of ``fusion_result.json``; FusionResultError says what is wrong."""
    p = Path(path)
    text = _read_text(p)
    values = _json_values(p, text)
    if not values:
        raise FusionResultError(f"{p}: empty file, not a fusion_result.json; {WHAT_TO_PASS}")
    layout, records = _records(p, values)
    rules: list[FiredRule] = []
    keys: list[tuple[str, str]] = []
    for where, session, graph, record in records:
        keys.append((session, graph))
        rules.extend(_rules(p, where, session, graph, record))
    return FusionResult(path=p, layout=layout, records=rules, graph_ids=tuple(keys))


def looks_like_fusion_result(text: str) -> bool:
    """Cheap sniff on the first bytes: a JSON text naming a fusion_result key."""
    head = text.lstrip()[:4096]
    return head[:1] in ("{", "[") and any(
        key in head for key in ('"graph_fusion"', '"ub_fusion"', f'"{SESSION_KEY_PREFIX}')
    )


def _read_text(p: Path) -> str:
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise FusionResultError(f"{p}: no such file; {WHAT_TO_PASS}") from None
    except IsADirectoryError:
        raise FusionResultError(f"{p}: is a folder; {WHAT_TO_PASS}") from None
    except OSError as exc:
        raise FusionResultError(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FusionResultError(
            f"{p}: binary data (not UTF-8 text at byte {exc.start}), not a fusion_result.json; "
            f"{WHAT_TO_PASS}"
        ) from None


def _json_values(p: Path, text: str) -> list[Any]:
    """Every JSON value in the text: one document, or several written back to back."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            return values
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            what = "not JSON" if not values else f"after {len(values)} record(s), not JSON"
            raise FusionResultError(
                # json's "Unterminated string starting at" expects the position after it
                f"{p}: line {exc.lineno} column {exc.colno}: {exc.msg.removesuffix(' at')} "
                f"({what}); "
                f"expected a fusion_result.json; {WHAT_TO_PASS}"
            ) from None
        except RecursionError:
            raise FusionResultError(
                f"{p}: arrays or objects nested too deep to read, not a fusion_result.json; "
                f"{WHAT_TO_PASS}"
            ) from None
        values.append(value)


Record = tuple[str, str, str, Mapping[str, Any]]  # (where, session, graph, record)


def _records(p: Path, values: list[Any]) -> tuple[str, list[Record]]:
    if len(values) == 1:
        value = values[0]
        if isinstance(value, list):
            return "record_list", [_record(p, f"record {i + 1}", v) for i, v in enumerate(value)]
        if isinstance(value, Mapping):
            if not value:
                return "empty", []
            if any(str(k).startswith(SESSION_KEY_PREFIX) for k in value):
                return "session_keyed", _session_keyed(p, value)
            rec = _record(p, "the top-level object", value)
            return ("graphId_record" if "graphId" in value else "record"), [rec]
        raise FusionResultError(
            f"{p}: a JSON {type(value).__name__}, not a fusion_result.json; {WHAT_TO_PASS}"
        )
    records = [_record(p, f"record {i + 1}", v) for i, v in enumerate(values)]
    old = all(isinstance(v, Mapping) and "graphId" in v for v in values)
    return ("graphId_stream" if old else "record_stream"), records


def _session_keyed(p: Path, value: Mapping[str, Any]) -> list[Record]:
    out: list[Record] = []
    for key, body in value.items():
        if not str(key).startswith(SESSION_KEY_PREFIX):
            raise FusionResultError(
                f"{p}: top-level key {key!r} among session keys "
                f"({SESSION_KEY_PREFIX}S_G expected); {WHAT_TO_PASS}"
            )
        if not isinstance(body, Mapping):
            raise FusionResultError(
                f"{p}: {key}: a JSON {type(body).__name__}, expected an object with "
                "graph_fusion / ub_fusion"
            )
        session, graph = _split_ids(key[len(SESSION_KEY_PREFIX) :])
        out.append((key, session, graph, body))
    return out


def _record(p: Path, where: str, value: Any) -> Record:
    if not isinstance(value, Mapping):
        raise FusionResultError(
            f"{p}: {where}: a JSON {type(value).__name__}, expected an object with "
            f"graph_fusion / ub_fusion; {WHAT_TO_PASS}"
        )
    if value and not (set(value) & RECORD_KEYS):
        keys = ", ".join(sorted(map(str, value))[:6])
        raise FusionResultError(
            f"{p}: {where} has keys {keys}, none of graph_fusion, ub_fusion, "
            f"session_and_graph_id, graphId: not a fusion_result.json; {WHAT_TO_PASS}"
        )
    if "session_and_graph_id" in value:
        session, graph = _split_ids(str(value["session_and_graph_id"]))
    else:
        session, graph = str(value.get("sessionId", "")), str(value.get("graphId", ""))
    return where, session, graph, value


def _split_ids(text: str) -> tuple[str, str]:
    """``"S_G"`` -> (S, G); a text without ``_`` is taken as the graph id."""
    session, sep, graph = text.partition("_")
    return (session, graph) if sep else ("", text)


def _rules(p: Path, where: str, session: str, graph: str, record: Mapping[str, Any]):
    for key, section in SECTION_KEYS:
        table = record.get(key)
        if table is None:
            continue
        if not isinstance(table, Mapping):
            raise FusionResultError(
                f"{p}: {where}: {key} is a JSON {type(table).__name__}, expected an object "
                "mapping each rule to its counts"
            )
        for rule, counts in table.items():
            if not isinstance(counts, Mapping):
                raise FusionResultError(
                    f"{p}: {where}: {key}.{rule}: a JSON {type(counts).__name__}, expected "
                    '{"match_times": ..., "effect_times": ...}'
                )
            yield FiredRule(
                name=str(rule),
                section=section,
                effect_times=_count(p, where, key, rule, counts, "effect_times") or 0,
                match_times=_count(p, where, key, rule, counts, "match_times"),
                repository_hit_times=_count(p, where, key, rule, counts, "repository_hit_times"),
                session=session,
                graph=graph,
            )


def _count(p: Path, where: str, key: str, rule: str, counts: Mapping, name: str) -> int | None:
    value = counts.get(name)
    if value is None:
        return None
    try:
        number = int(str(value).strip()) if not isinstance(value, bool) else None
    except ValueError:
        number = None
    if number is None or number < 0:
        raise FusionResultError(
            f"{p}: {where}: {key}.{rule}.{name} is {value!r}, expected a count (0, 1, ...)"
        )
    return number
