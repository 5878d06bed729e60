"""Which fusion-off tensor each fusion-on tensor is compared with: msaccucmp's ``-f/-cf`` rules.

msaccucmp reads both graphs into "fusion rules" (formats.md 3.3), merges them, and then walks the
merged rule group by group (formats.md 4.2). This module reproduces that reading exactly, quirks
included, so that our rows are msaccucmp's rows:

1. :func:`fusion_rule` reads one graph: per op its data inputs, its original op names
   (``_datadump_original_op_names``; absent → the op's own name, present but empty → ``['']``),
   and its output descriptions (only descs that carry an ``attr`` map count). Ops are grouped
   by ``_L1_fusion_sub_graph_no``, else by their single original name, else by the joined names.
   The group number (msaccucmp's ``Index`` column) is the order in which groups first appear.
2. :func:`merge_rules` maps every fusion-on op's original names and output descs onto the
   fusion-off op that carries those original names. Walking the on-graph groups from last to
   first, an op whose first original name (or the off op it maps to) was already taken by a
   later op is dropped, and only the last op of each group stays findable as a producer; both
   are msaccucmp behaviours and both decide which rows exist.
3. :meth:`MergedRule.resolve` finds the fusion-off tensor for one fusion-on tensor: outputs via
   their merged desc, inputs via the producer's merged desc, walking through ``Cast`` and
   ``TransData`` producers.

Everything here depends only on the two graphs, never on dump files.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any

from ..readers.dumpdir import sanitize_op_name, without_lxslice
from ..readers.graph import Graph, GraphError, Op, load_graph
from ..readers.signals_held import signals_held
from .forked import Kept

with signals_held():  # msgspec does not survive a Ctrl-C inside its C code (signals_held.py)
    import msgspec

SPECIAL_OP_TYPES = ("Cast", "TransData")
"""Producers msaccucmp looks through (input j → that op's input j) when pairing inputs."""

DEQUANT_SUFFIXES = ("_dequant_layer", "AscendDequant", "_dequant")
_QUANT_NAME = re.compile(r"_quant_layer|/AscendQuant|/AscendWeightQuant|\.quant|\.weight_quant")
_DEQUANT_NAME = re.compile(
    r"_dequant_layer|_anti_quant_layer|/AscendDequant|/AntiQuant|\.dequant|\.anti_quant"
)
_NUMBER = re.compile(r"^[0-9]+$")


class Relation(Enum):
    """How the ops of one group relate to the original ops (msaccucmp's FusionRelation)."""

    ONE_TO_ONE = "OneToOne"
    MULTI_TO_ONE = "MultiToOne"
    ONE_TO_MULTI = "OneToMulti"
    MULTI_TO_MULTI = "MultiToMulti"
    L1_FUSION = "L1Fusion"


class OriginDesc(msgspec.Struct, array_like=True, gc=False):
    """One counted output desc: which original (after merging: fusion-off) op output it is.
    A msgspec Struct, as :class:`RuleOp`."""

    origin_name: str
    origin_output_index: int | None
    origin_format: str = ""
    origin_shape: tuple[int, ...] = ()
    dtype: str = ""


class RuleOp(msgspec.Struct, array_like=True, gc=False):
    """One op as msaccucmp's fusion rule sees it.

    A msgspec Struct, not a dataclass: one is built per op of both graphs (~12,000 at 5,000
    ops), and the fusion-off rule comes back from the digest helper as msgpack decoded in C
    (:class:`GraphDigest`). Untracked by the cyclic collector: it holds no cycle."""

    name: str
    type: str
    sequence: int  # the graph's ``id``
    inputs: list[str]
    original_names: list[str]
    l1_fusion_no: str = ""
    is_multi_op: bool = False
    outputs: list[OriginDesc] = []
    group: int = 0  # msaccucmp's op_id: the Index column
    quant_filter: bool = False

    @property
    def is_inner_node(self) -> bool:
        """A multi-op member none of whose outputs stands for an original output."""
        return self.is_multi_op and all(desc.origin_name == "" for desc in self.outputs)

    @property
    def is_dequant(self) -> bool:
        """msaccucmp compares no inputs of dequantisation ops."""
        return self.type == "AscendDequant" or self.name.endswith(DEQUANT_SUFFIXES)

    @property
    def skips_outputs(self) -> bool:
        """msaccucmp compares no outputs of AscendQuant ops."""
        return self.type == "AscendQuant"


@dataclass
class FusionRule:
    """One graph read as a fusion rule: ops in groups, group keys by op name."""

    groups: dict[Any, list[RuleOp]] = field(default_factory=dict)
    group_of: dict[str, Any] = field(default_factory=dict)  # op name → group key
    ops: list[RuleOp] = field(default_factory=list)  # sorted by graph id
    warnings: list[str] = field(default_factory=list)

    def origin_to_op(self) -> dict[str, str]:
        """Original op name → name of the (last, by id) op carrying it."""
        mapping: dict[str, str] = {}
        for op in self.ops:
            for origin in op.original_names:
                mapping[origin] = op.name
        return mapping


# ----------------------------------------------------------------------------- reading a graph


def _raw_attr(attrs: dict[str, Any], key: str) -> Any:
    value = attrs.get(key)
    return value if isinstance(value, dict) else None


def _string_attr(attrs: dict[str, Any], key: str) -> str:
    raw = _raw_attr(attrs, key)
    value = raw.get("s") if raw else None
    return value if isinstance(value, str) else ""


def _int_attr(attrs: dict[str, Any], key: str) -> int | None:
    raw = _raw_attr(attrs, key)
    value = raw.get("i") if raw else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _NUMBER.match(value.lstrip("-")):
        return int(value)
    return None


def _bool_attr(attrs: dict[str, Any], key: str) -> bool:
    raw = _raw_attr(attrs, key)
    value = raw.get("b") if raw else None
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _origin_shape(attrs: dict[str, Any]) -> tuple[int, ...]:
    raw = _raw_attr(attrs, "origin_shape")
    listed = raw.get("list") if raw else None
    values = listed.get("i") if isinstance(listed, dict) else None
    if not isinstance(values, list):
        return ()
    try:
        return tuple(int(v) for v in values)
    except (TypeError, ValueError):
        return ()


def _original_names(op: Op) -> tuple[list[str], bool]:
    """msaccucmp's reading of ``_datadump_original_op_names`` and whether the key is present."""
    if "_datadump_original_op_names" not in op.raw_attrs:
        return [without_lxslice(op.name)], False
    raw = op.raw_attrs.get("_datadump_original_op_names")
    listed = raw.get("list") if isinstance(raw, dict) else None
    if not isinstance(listed, dict) or "s" not in listed:
        return [""], True
    return [str(v) for v in listed.get("s") or []], True


def _data_inputs(op: Op) -> list[str]:
    inputs = op.inputs
    if len(inputs) == 1 and inputs[0] == "":
        return []
    kept = [item for item in inputs if item and not item.endswith(":-1")]
    if any("_lxslice" in item for item in kept):  # FFTS+ slices (rare): names without them
        return [without_lxslice(item) for item in kept]
    return kept


def _output_descs(op: Op) -> list[OriginDesc]:
    descs = []
    for position, desc in enumerate(op.output_descs):
        if not desc.has_attr:
            continue
        try:
            descs.append(_origin_desc_fast(desc.raw_attrs, position, desc.dtype))
        except Exception:  # a value atc does not write: the general reading below decides
            descs.append(_origin_desc(desc.raw_attrs, position, desc.dtype))
    return descs


def _origin_desc(attrs: dict[str, Any], position: int, dtype: str) -> OriginDesc:
    """msaccucmp's reading of one counted output desc (its raw attrs)."""
    index = _int_attr(attrs, "_datadump_origin_output_index")
    fmt = _string_attr(attrs, "_datadump_origin_format") or _string_attr(attrs, "origin_format")
    return OriginDesc(
        origin_name=_string_attr(attrs, "_datadump_origin_name"),
        origin_output_index=position if index is None else index,
        origin_format=fmt,
        origin_shape=_origin_shape(attrs),
        dtype=dtype,
    )


def _origin_desc_fast(attrs: dict[str, Any], position: int, dtype: str) -> OriginDesc:
    """:func:`_origin_desc` for the values atc writes (each attr absent, or ``{"s": str}``,
    ``{"i": int}``, ``{"list": {"i": [int, ...]}}``, ``{"list": {}}``); raises on anything
    else (issue 16: this runs for every output of both graphs; the type tests are written out,
    not called). test_pairing_fast.py compares both readings."""
    get = attrs.get
    value = get("_datadump_origin_output_index")
    if value is None:
        index = position
    elif type(index := value["i"]) is not int:
        raise TypeError("not an int")
    value = get("_datadump_origin_format")
    fmt = "" if value is None else value["s"]
    if not fmt:
        value = get("origin_format")
        fmt = "" if value is None else value["s"]
    if type(fmt) is not str:
        raise TypeError("not a str")
    value = get("_datadump_origin_name")
    name = "" if value is None else value["s"]
    if type(name) is not str:
        raise TypeError("not a str")
    value = get("origin_shape")
    if value is None:
        shape: tuple[int, ...] = ()
    else:
        listed = value["list"]
        if type(listed) is not dict:
            raise TypeError("not a dict")
        dims = listed.get("i")  # no "i": an empty list (a scalar)
        if dims is None:
            shape = ()
        elif type(dims) is not list:
            raise TypeError("not a list")
        else:
            shape = tuple(dims)
            for dim in shape:
                if type(dim) is not int:
                    raise TypeError("not an int")
    return OriginDesc(name, index, fmt, shape, dtype)


def _fill_origin_names(descs: list[OriginDesc], name: str) -> None:
    if not descs:
        descs.append(OriginDesc(name, None))
        return
    for desc in descs:
        if desc.origin_name == "":
            desc.origin_name = name


def group_key(name: str, l1_fusion_no: str, original_names: list[str]) -> Any:
    """msaccucmp's "fusion op name": L1 sub-graph number, else the single original name (its
    own name when that is empty), else a uuid3 of the joined names, else the op's name."""
    if l1_fusion_no:
        return l1_fusion_no
    if not original_names:
        return name
    if len(original_names) == 1:
        return original_names[0] or name
    return uuid.uuid3(uuid.NAMESPACE_DNS, "".join(original_names))


def fusion_rule(graph: Graph) -> FusionRule:
    """Read every graph of the model (main graph first) as msaccucmp's FusionRuleParser does."""
    rule = FusionRule()
    for part in graph.all_graphs:
        for op in part.ops:
            _add_op(rule, op)
        _adjust_renamed(rule)
    rule.ops.sort(key=lambda item: item.sequence)
    _mark_quant_filter(rule.ops)
    return rule


_L1_NO = "_L1_fusion_sub_graph_no"
_MULTI_OP = "_datadump_is_multiop"


def _add_op(rule: FusionRule, op: Op) -> None:
    name = without_lxslice(op.name)
    originals, present = _original_names(op)
    outputs = _output_descs(op)
    if not present:
        _fill_origin_names(outputs, name)
    raw_attrs = op.raw_attrs
    # absent (most ops): "" and False, what the readers give for an absent key
    l1_no = _string_attr(raw_attrs, _L1_NO) if _L1_NO in raw_attrs else ""
    key = group_key(name, l1_no, originals)
    rule.group_of[name] = key
    item = RuleOp(
        name=name,
        type=op.type,
        sequence=op.id,
        inputs=_data_inputs(op),
        original_names=originals,
        l1_fusion_no=l1_no,
        is_multi_op=_bool_attr(raw_attrs, _MULTI_OP) if _MULTI_OP in raw_attrs else False,
        outputs=outputs,
    )
    members = rule.groups.get(key)
    if members is None:
        item.group = len(rule.groups)
        rule.groups[key] = [item]
        rule.ops.append(item)
    else:
        item.group = members[0].group
        if all(member.name != name for member in members):
            members.append(item)
            rule.ops.append(item)


def _adjust_renamed(rule: FusionRule) -> None:
    """A lone op standing for exactly one other name inherits it for unnamed output descs."""
    for members in rule.groups.values():
        if len(members) != 1:
            continue
        op = members[0]
        if len(op.original_names) == 1 and rule.group_of.get(op.name) == op.original_names[0]:
            _fill_origin_names(op.outputs, op.original_names[0])


def _name_kind(op: RuleOp) -> int:
    joined = "".join(op.original_names)
    if "uant" not in op.name and "uant" not in joined:  # every pattern spells (Q|q)uant
        return 0
    kind = 0
    if _QUANT_NAME.search(op.name) or _QUANT_NAME.search(joined):
        kind += 2
    if _DEQUANT_NAME.search(op.name) or _DEQUANT_NAME.search(joined):
        kind += 3
    return kind


def _output_kind(name_kind: int, dtype: str, in_pairs: bool) -> int:
    """0 normal, 1 between quant and dequant, 2 quant, 3 dequant (msaccucmp's QuantFilter)."""
    if name_kind == 0:
        return 1 if in_pairs else 0
    if name_kind in (2, 5) and dtype == "DT_INT8":
        return 2
    if name_kind in (3, 5) and dtype == "DT_FLOAT16":
        return 3
    return 1 if in_pairs else 0


def _mark_quant_filter(ops: list[RuleOp]) -> None:
    """Ops between a quantize and a dequantize op are not compared (msaccucmp's QuantFilter)."""
    name_kinds = [_name_kind(op) for op in ops]
    if not any(name_kinds):
        return  # without a quantize op no op is between one and a dequantize op
    output_kinds: dict[str, list[int]] = {}
    for op, name_kind in zip(ops, name_kinds, strict=True):
        in_pairs = False
        for item in op.inputs:
            if ":" not in item:
                continue
            producer, _, index = item.rpartition(":")
            if not index.isdigit():
                continue
            kinds = output_kinds.get(producer)
            if kinds is None or len(kinds) <= int(index):
                continue
            if kinds[int(index)] in (1, 2):
                in_pairs = True
                break
        kinds = [_output_kind(name_kind, desc.dtype, in_pairs) for desc in op.outputs]
        output_kinds[op.name] = kinds
        op.quant_filter = in_pairs and not all(kind == 3 for kind in kinds)


# ----------------------------------------------------------------------------- merging


@dataclass
class MergedRule:
    """The fusion-on rule after msaccucmp's merge with the fusion-off rule."""

    groups: dict[Any, list[RuleOp]]
    group_of: dict[str, Any]  # only one (the last) op name per group, as in msaccucmp
    off_rule: FusionRule
    warnings: list[str] = field(default_factory=list)

    def find(self, name: str) -> RuleOp | None:
        """The merged op msaccucmp finds by name, or None ("There is no ... in the fusion rule
        file.")."""
        key = self.group_of.get(name)
        if key is None:
            return None
        for op in self.groups.get(key, ()):
            if op.name == name:
                return op
        return None

    def ordered_groups(self) -> list[list[RuleOp]]:
        """Groups by Index (group number), the order of msaccucmp's result rows."""
        return sorted(self.groups.values(), key=lambda members: members[0].group)

    def resolve(self, op: RuleOp, index: int, is_input: bool) -> RightRef | Unpaired:
        """The fusion-off tensor for ``op``'s ``input``/``output`` number ``index``."""
        target, target_index = op, index
        if is_input:
            step = self._producer(target, target_index)
            if isinstance(step, Unpaired):
                return step
            target, target_index = step
        walked = []
        while target.type in SPECIAL_OP_TYPES:
            walked.append(target.name)
            step = self._producer(target, target_index)
            if isinstance(step, Unpaired):
                return step
            target, target_index = step
        if not target.outputs:
            return Unpaired(
                f'The output description of the fusion operator "{target.name}" is empty.',
                no_dump=True,
            )
        desc = (
            target.outputs[target_index]
            if target_index < len(target.outputs)
            else target.outputs[0]
        )
        if desc.origin_name == "":
            return Unpaired(
                f"The origin name of the {target.name}:{target_index} is empty.", no_dump=True
            )
        right_index = target_index if desc.origin_output_index is None else desc.origin_output_index
        return RightRef(desc.origin_name, right_index, target.name, target_index, tuple(walked))

    def _producer(self, op: RuleOp, index: int) -> tuple[RuleOp, int] | Unpaired:
        if index >= len(op.inputs):
            return Unpaired(
                f"The input index ({index}) is out of range ({len(op.inputs)}) for the operator "
                "list.",
                csv_reason="",
            )
        source = op.inputs[index]
        parts = source.split(":")
        if len(parts) != 2:
            return Unpaired(
                f"The input information ({source}) is invalid. It only supports op_name:index."
            )
        name, number = parts[0].strip(), parts[1].strip()
        if not name:
            return Unpaired(
                f"The input information ({source}) is invalid. The input operator name is empty."
            )
        if not _NUMBER.match(number):
            return Unpaired(
                f"The input information ({source}) is invalid. The input index only supports "
                "numbers."
            )
        producer = self.find(name)
        if producer is None:
            return Unpaired(f'There is no "{name}" in the fusion rule file.')
        return producer, int(number)


@dataclass(frozen=True)
class RightRef:
    """The fusion-off op output to compare with. ``via_op``/``via_index`` is the fusion-on op
    output whose merged desc named it (the producer, for inputs); ``walked`` lists the
    Cast/TransData ops looked through."""

    op_name: str
    output_index: int
    via_op: str
    via_index: int
    walked: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unpaired:
    """No fusion-off tensor can be named. ``reason`` explains it; ``no_dump`` marks the cases
    msaccucmp reports as "There is no the ground truth dump file for ...". ``csv_reason`` is
    what msaccucmp writes in CompareFailReason when it differs from ``reason`` (it writes an
    empty cell for an input index beyond the graph's input list)."""

    reason: str
    no_dump: bool = False
    csv_reason: str | None = None


def _take_first_original(
    op: RuleOp, seen_on: set[str], seen_off: set[str], off_map: dict[str, str]
) -> bool:
    first = op.original_names[0] if op.original_names else ""
    if first in seen_on:
        return False
    seen_on.add(first)
    if first not in off_map:
        return True
    if off_map[first] in seen_off:
        return False
    seen_off.add(off_map[first])
    return True


def _merged_original_names(op: RuleOp, off_map: dict[str, str], warnings: list[str]) -> list[str]:
    if op.original_names == [""]:
        return [""]
    names: list[str] = []
    for origin in op.original_names:
        if origin in off_map:
            if off_map[origin] not in names:
                names.append(off_map[origin])
        else:
            warnings.append(
                f'{op.name}: original op "{origin}" is not in the fusion-off graph; it is not '
                "compared"
            )
    return names


def _merge_outputs(
    op: RuleOp, off: FusionRule, off_map: dict[str, str], warnings: list[str]
) -> None:
    for position, desc in enumerate(op.outputs):
        if not desc.origin_name:
            continue
        off_name = off_map.get(desc.origin_name)
        if off_name is None:
            warnings.append(
                f"{op.name}:output:{position}: origin {desc.origin_name!r} is in no fusion-off op"
            )
            continue
        found = False
        for off_op in off.groups.get(off.group_of.get(off_name), ()):
            for off_index, off_desc in enumerate(off_op.outputs):
                if (
                    off_desc.origin_name == desc.origin_name
                    and off_desc.origin_output_index == desc.origin_output_index
                ):
                    desc.origin_output_index = off_index
                    found = True
                    break
            if found:
                break
        if not found:
            warnings.append(
                f"{op.name}:output:{position}: no output of fusion-off op {off_name!r} stands for "
                f"{desc.origin_name}:{desc.origin_output_index}"
            )
        desc.origin_name = off_name


def merge_rules(on: FusionRule, off: FusionRule) -> MergedRule:
    """msaccucmp's ``merge_close_and_open_fusion_rule`` (mutates the ops of ``on``)."""
    off_map = off.origin_to_op()
    warnings: list[str] = []
    groups: dict[Any, list[RuleOp]] = {}
    group_of: dict[str, Any] = {}
    done: set[Any] = set()
    seen_on: set[str] = set()
    seen_off: set[str] = set()
    for name, key in reversed(list(on.group_of.items())):
        if key in done:
            continue
        done.add(key)
        group_of[name] = key
        for op in on.groups.get(key, ()):
            if not _take_first_original(op, seen_on, seen_off, off_map):
                warnings.append(
                    f"{op.name}: stands for the same original op as a later op; msaccucmp does "
                    "not compare it"
                )
                continue
            op.original_names = _merged_original_names(op, off_map, warnings)
            _merge_outputs(op, off, off_map, warnings)
            groups.setdefault(key, []).append(op)
    return MergedRule(groups=groups, group_of=group_of, off_rule=off, warnings=warnings)


def relation(members: list[RuleOp]) -> Relation:
    """msaccucmp's relation of a group, which decides how its rows are made."""
    if len(members) == 1:
        return Relation.MULTI_TO_ONE if len(members[0].original_names) > 1 else Relation.ONE_TO_ONE
    if members[0].l1_fusion_no:
        return Relation.L1_FUSION
    if len(members[0].original_names) == 1:
        return Relation.ONE_TO_MULTI
    return Relation.MULTI_TO_MULTI


def group_labels(members: list[RuleOp]) -> tuple[str, str]:
    """(NPUDump, GroundTruth) for the rows of a multi-op group: all op names, all original-name
    lists, grouped by original names."""
    by_origin: dict[str, list[str]] = {}
    for op in members:
        by_origin.setdefault(",".join(op.original_names), []).append(op.name)
    npu = ",".join(name for names in by_origin.values() for name in names)
    return npu, ",".join(by_origin)


def op_labels(op: RuleOp) -> tuple[str, str]:
    """(NPUDump, GroundTruth) for an op of a one-op group; ``*`` when it stands for nothing."""
    truth = ",".join(op.original_names)
    return op.name, truth or "*"


def build_merged_rule(on_graph: Graph, off_graph: Graph) -> MergedRule:
    """Read both graphs and merge them, as ``msaccucmp compare -f ON -cf OFF`` does."""
    return merge_rules(fusion_rule(on_graph), fusion_rule(off_graph))


# ----------------------------------------------------------------------------- a graph's digest
# Kept here, beside the rule, so that the helper process making it imports the graph reader and
# this module only: no numpy, no dump readers (issue 16, sixth round; test_pairing_digest.py).


def fusion_marks(graph: Graph) -> int:
    """How many ops carry fusion attributes (pass names or original-op lists)."""
    return sum(1 for op in graph.ops if op.has_original_names or op.has_pass_names)


def op_names(graph: Graph) -> set[str]:
    """Every op's name as dump files spell it, over all the model's graphs."""
    return {sanitize_op_name(op.name) for part in graph.all_graphs for op in part.ops}


@dataclass
class GraphDigest:
    """What the job needs of the graph it compares against: its pairing rule, name, op names,
    fusion marks, and the dtypes its ops output (their widest counts in a comparing worker's
    memory: ``compare.worker_memory``). Reading the fusion-off graph into this runs in a
    helper process while the job reads the fusion-on graph (both are pure-Python work of
    similar size).

    Pickled as msgpack bytes (:class:`_DigestWire`): the helper's answer is on the job's
    critical path, and pickling its ~7,000 ops there and back took ~50 ms at 5,000 ops
    against ~30 ms this way (bench_discover.py, minimums). Whatever msgpack cannot carry (an
    op name that is not valid UTF-8, an id beyond 64 bits, a group key of another kind) is
    pickled the default way."""

    path: Path
    name: str
    fusion_marks: int
    op_names: set[str]
    rule: FusionRule
    output_dtypes: frozenset[str] = frozenset()

    def __reduce__(self):
        try:
            return (_digest_from_wire, (_WIRE_ENCODER.encode(_digest_wire(self)),))
        except (msgspec.EncodeError, KeyError, OverflowError, TypeError, ValueError):
            return (GraphDigest, tuple(getattr(self, name) for name in _DIGEST_FIELDS))


_DIGEST_FIELDS = ("path", "name", "fusion_marks", "op_names", "rule", "output_dtypes")
_STRING_KEY, _UUID_KEY = 0, 1


class _DigestWire(msgspec.Struct, array_like=True, gc=False):
    """A :class:`GraphDigest` as msgpack carries it. Each op is sent once, in ``rule.ops``'s
    order, and rejoins its group by its ``group`` number (the group's place in ``groups``);
    ``group_of`` refers to the keys by place too, so both dicts come back in their order (the
    merge walks ``group_of`` in it)."""

    path: str
    name: str
    fusion_marks: int
    op_names: list[str]
    output_dtypes: list[str]
    ops: list[RuleOp]
    keys: list[tuple[int, str]]  # the groups' keys, in the groups' order: (kind, text)
    named: list[str]  # group_of's names, in its order
    named_keys: list[Annotated[int, msgspec.Meta(ge=0)]]  # and their keys (places in ``keys``)
    warnings: list[str]


def _wire_key(key: Any) -> tuple[int, str]:
    if type(key) is str:
        return (_STRING_KEY, key)
    if type(key) is uuid.UUID:
        return (_UUID_KEY, key.hex)
    raise TypeError(f"group key {key!r} is neither a str nor a UUID")


def _digest_wire(digest: GraphDigest) -> _DigestWire:
    """Raises ValueError when the groups cannot be rebuilt from the ops' ``group`` numbers
    in ``rule.ops``'s order (then the digest is pickled the default way)."""
    rule = digest.rule
    count = 0
    for number, members in enumerate(rule.groups.values()):
        count += len(members)
        if members[0].group != number or (
            len(members) > 1
            and any(
                a.group != number or a.sequence > b.sequence or b.group != number
                for a, b in pairwise(members)
            )
        ):  # its ops are not numbered as it is, or not in its order in rule.ops (by graph id)
            raise ValueError("a group that its ops' numbers and ids do not rebuild")
    if count != len(rule.ops):
        raise ValueError("the rule's groups do not hold each of its ops once")
    place = {key: number for number, key in enumerate(rule.groups)}
    return _DigestWire(
        path=os.fspath(digest.path),
        name=digest.name,
        fusion_marks=digest.fusion_marks,
        op_names=list(digest.op_names),
        output_dtypes=list(digest.output_dtypes),
        ops=rule.ops,
        keys=[_wire_key(key) for key in rule.groups],
        named=list(rule.group_of),
        named_keys=[place[key] for key in rule.group_of.values()],
        warnings=rule.warnings,
    )


def _digest_from_wire(data: bytes) -> GraphDigest:
    """The unpickling side of :meth:`GraphDigest.__reduce__`. A message that does not decode
    is an unpickling error: the caller then reads the graph itself (:mod:`.forked`)."""
    try:
        wire = _WIRE_DECODER.decode(data)
        keys = [uuid.UUID(hex=text) if kind == _UUID_KEY else text for kind, text in wire.keys]
        groups: dict[Any, list[RuleOp]] = {key: [] for key in keys}
        for op in wire.ops:
            if op.group < 0:  # not a place in keys (a negative index would wrap around)
                raise ValueError(f"op {op.name!r} has group number {op.group}")
            groups[keys[op.group]].append(op)
        group_of = dict(zip(wire.named, map(keys.__getitem__, wire.named_keys), strict=True))
    except (msgspec.DecodeError, IndexError, ValueError) as error:
        raise pickle.UnpicklingError(f"a graph digest that does not decode: {error}") from None
    return GraphDigest(
        path=Path(wire.path),
        name=wire.name,
        fusion_marks=wire.fusion_marks,
        op_names=set(wire.op_names),
        rule=FusionRule(groups, group_of, wire.ops, wire.warnings),
        output_dtypes=frozenset(wire.output_dtypes),
    )


with signals_held():
    _WIRE_ENCODER = msgspec.msgpack.Encoder()
    _WIRE_DECODER = msgspec.msgpack.Decoder(_DigestWire)


def graph_digest(graph: Graph, rule: FusionRule | None = None) -> GraphDigest:
    return GraphDigest(
        path=Path(graph.path) if graph.path is not None else Path(),
        name=graph.name,
        fusion_marks=fusion_marks(graph),
        op_names=op_names(graph),
        rule=rule if rule is not None else fusion_rule(graph),
        output_dtypes=frozenset(
            desc.dtype for part in graph.all_graphs for op in part.ops for desc in op.output_descs
        ),
    )


def digest_in_child(
    path: str | os.PathLike,
    tell: Callable[[str], None],
    then: Callable[[Graph, Callable[[], Any]], Any] | None = None,
) -> tuple | Kept:
    """Helper-process body: ("ok", digest), ("graph", GraphError fields) or ("bug", text).
    The graph's name is told as soon as the graph is read: the parent indexes the fusion-off
    dump folder with it while this process works out the pairing rule. ``then``: the digest
    is answered with :class:`.forked.Kept`, and the process stays to run ``then(graph,
    receive)`` for the caller's next request (the replay, on the graph read here)."""
    try:
        # the digest reads no input desc; the replay's original ops do (their kernels' layout)
        graph = load_graph(path, input_descs=then is not None)
        tell(graph.name)
        digest = ("ok", graph_digest(graph))
        if then is None:
            return digest
        return Kept(digest, functools.partial(then, graph))
    except GraphError as error:
        return ("graph", (error.path, error.message, error.line, error.column))
    except Exception:  # reported by the parent, which then reads the graph itself
        return ("bug", traceback.format_exc())
