"""What a file given as a graph really is, from its first bytes.

GE writes its graph dumps in two forms side by side (``ge_proto_*_Build.txt``: the ``ge.proto``
ModelDef in protobuf text, and ``ge_onnx_*_Build.pbtxt``: the same graph as ONNX text), and users
pass all sorts of neighbours by mistake: a TensorFlow GraphDef or Caffe prototxt (which look like
protobuf text too), a dump file, a fusion_result.json, a tiny placeholder file. The text parser
would read most of those as "a model with no ops"; :func:`sniff_graph` tells them apart first so
the refusal can say what the file is and what to pass instead.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from .fusion_result import looks_like_fusion_result

GE_TEXT, GE_JSON = "ge_text", "ge_json"
GRAPH_KINDS = (GE_TEXT, GE_JSON)
FOREIGN_KINDS = frozenset(
    {"onnx_text", "tf_graphdef", "caffe_prototxt", "dump", "fusion_result", "fusion_switch_cfg"}
    | {"stats_csv", "empty", "tiny", "binary"}
)
TINY = 8  # bytes: no GE graph is this short
WANT = (
    "pass the GE graph dump ge_proto_*_Build.txt (dump_graph / DUMP_GE_GRAPH=2) or the JSON "
    "that atc --mode=5 writes from it"
)
_HEAD = 1 << 16
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_ONNX_FIELDS = {b"ir_version", b"producer_name", b"producer_version", b"opset_import"}
_OLD_CFG_LINE = re.compile(r"(?:[\w./-]+[ \t]*:[ \t]*[A-Za-z]+[ \t]*(?:\r?\n[ \t\r\n]*|$))+")
_ONNX_NAME = re.compile(r"ge_onnx_(\d+)_")


@dataclass(frozen=True)
class GraphKind:
    """``kind``: ge_text | ge_json | onnx_text | tf_graphdef | caffe_prototxt | dump |
    fusion_result | fusion_switch_cfg | empty | tiny | binary | json | text.
    ``what`` says it in words; ``advice`` what to pass instead ("" for a GE graph)."""

    kind: str
    what: str
    advice: str = ""

    @property
    def is_graph(self) -> bool:
        return self.kind in GRAPH_KINDS

    @property
    def is_foreign(self) -> bool:
        """Recognised as something else for sure (plain malformed text is left to the parser,
        whose error names line and column)."""
        return self.kind in FOREIGN_KINDS

    def refusal(self) -> str:
        return f"{self.what}, not a GE graph; {self.advice}"


def sniff_graph(path: str | os.PathLike, head: bytes | None = None) -> GraphKind:
    """Classify ``path`` from its first 64 KiB (``head`` when the caller already read them)."""
    p = Path(path)
    if head is None or len(head) < _HEAD:
        with open(p, "rb") as handle:
            head = handle.read(_HEAD)
    size = p.stat().st_size
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not body:
        return GraphKind("empty", f"an empty file ({size} bytes)", WANT)
    if _binary(head):
        return _binary_kind(head, size)
    if body[:1] in (b"{", b"["):
        return _json_kind(body)
    if _OLD_CFG_LINE.fullmatch(body.decode("utf-8", "replace").strip()):
        return GraphKind(
            "fusion_switch_cfg",
            "a fusion switch configuration in the old line format (Name:on|off)",
            "check it with fusion-switch check; " + WANT,
        )
    if body.startswith(b"Op Type,Op Name,"):
        return GraphKind(
            "stats_csv",
            "a statistics dump (statistic.csv: per-tensor max/min/L2 norm)",
            "statistics trees go to fusion-switch dumps / compare as dump folders; " + WANT,
        )
    fields = top_level_fields(body[:4096])
    if not fields:
        shown = body[:20].decode("utf-8", "replace").strip()
        if size < TINY:
            return GraphKind("tiny", f"a {size}-byte file holding {shown!r}", WANT)
        return GraphKind("text", f"text that is not protobuf text (starts {shown!r})", WANT)
    if fields & _ONNX_FIELDS:
        return GraphKind(
            "onnx_text",
            "GE's ONNX text dump (ModelProto: graph { node { op_type "
            "} }), written next to the ge_proto file",
            _onnx_advice(p),
        )
    if b"graph" in fields or b"op" in fields:
        return GraphKind(GE_TEXT, "a GE graph (ge.proto ModelDef text)")
    if b"node" in fields or b"versions" in fields or b"library" in fields:
        return GraphKind(
            "tf_graphdef",
            "a TensorFlow GraphDef in protobuf text (node { op: ... }): the framework's graph "
            "before GE compiled it",
            WANT,
        )
    if b"layer" in fields or b"layers" in fields:
        return GraphKind(
            "caffe_prototxt",
            "a Caffe network prototxt (layer { ... }): the model before atc converted it",
            WANT,
        )
    names = ", ".join(sorted(f.decode() for f in fields)[:5])
    return GraphKind("text", f"protobuf text with top-level fields {names} (no 'graph')", WANT)


def top_level_fields(text: bytes) -> set[bytes]:
    """Field names at depth 0 of protobuf text; empty when the text is not protobuf text
    (strings and comments are skipped; a head cut mid-way is fine)."""
    fields: set[bytes] = set()
    depth, i, end = 0, 0, len(text)
    while i < end:
        c = text[i : i + 1]
        if c in b" \t\r\n,;":
            i += 1
        elif c in (b'"', b"'"):
            i = _skip_string(text, i)
        elif c == b"#":
            nl = text.find(b"\n", i)
            i = end if nl < 0 else nl + 1
        elif c in (b"{", b"<"):
            depth, i = depth + 1, i + 1
        elif c in (b"}", b">"):
            depth, i = depth - 1, i + 1
            if depth < 0:
                return set()
        else:
            m = _IDENT.match(text, i)
            if m is None:
                if depth == 0:
                    return set()  # a number or symbol where a field name belongs
                i += 1
                continue
            j = m.end()
            while j < end and text[j : j + 1] in b" \t\r\n":
                j += 1
            sep = text[j : j + 1]
            if sep not in (b":", b"{", b"<"):
                if j >= end:
                    break  # the head ends here
                return set()
            if depth == 0:
                fields.add(m.group())
            i = j + 1 if sep == b":" else j
            if sep == b":":
                i = _skip_value(text, i)
    return fields


def _skip_string(text: bytes, i: int) -> int:
    quote, j, end = text[i : i + 1], i + 1, len(text)
    while j < end and text[j : j + 1] != quote:
        j += 2 if text[j : j + 1] == b"\\" else 1
    return j + 1


def _skip_value(text: bytes, i: int) -> int:
    """Past the scalar after ``name:`` (a message value ``{`` is left to the caller)."""
    end = len(text)
    while i < end and text[i : i + 1] in b" \t":
        i += 1
    c = text[i : i + 1]
    if c in (b'"', b"'"):
        i = _skip_string(text, i)
        while True:  # adjacent string literals concatenate
            j = i
            while j < end and text[j : j + 1] in b" \t\r\n":
                j += 1
            if text[j : j + 1] in (b'"', b"'"):
                i = _skip_string(text, j)
            else:
                return i
    if c in (b"{", b"<", b"["):
        return i
    while i < end and text[i : i + 1] not in b" \t\r\n{}<>,;#":
        i += 1
    return i


def _binary(head: bytes) -> bool:
    controls = sum(1 for b in head[:4096] if b < 0x20 and b not in b"\t\n\r\f\v\x1b")
    return b"\x00" in head[:4096] or controls * 10 > len(head[:4096])


def _binary_kind(head: bytes, size: int) -> GraphKind:
    if len(head) >= 8:
        (length,) = struct.unpack_from("<Q", head, 0)
        if 0 < length <= size - 8 and head[8:9] and head[8] in (0x0A, 0x10, 0x12, 0x1A, 0x22):
            return GraphKind(
                "dump",
                "a binary dump file (8-byte header length + DumpData header + tensors)",
                "dump files go to compare as -m/-g (or inspect them with fusion-switch dumps); "
                + WANT,
            )
    return GraphKind("binary", f"a binary file ({size} bytes), not text", WANT)


def _json_kind(body: bytes) -> GraphKind:
    text = body.decode("utf-8", "replace")
    if looks_like_fusion_result(text):
        return GraphKind(
            "fusion_result",
            "a fusion_result.json (which rules fired), not a graph",
            "give it with --fusion-result, or run fusion-switch passes on it; " + WANT,
        )
    if '"Switch"' in text[:4096] and ('"GraphFusion"' in text or '"UBFusion"' in text):
        return GraphKind(
            "fusion_switch_cfg",
            "a fusion switch configuration (Switch/GraphFusion), not a graph",
            "check it with fusion-switch check; " + WANT,
        )
    return GraphKind(GE_JSON, "a graph JSON (atc --mode=5)")


def _onnx_advice(p: Path) -> str:
    m = _ONNX_NAME.search(p.name)
    if m:
        twins = sorted(p.parent.glob(f"ge_proto_{m.group(1)}_*.txt"))
        if twins:
            return f"pass {twins[0]} (the same graph in ge.proto text, next to it)"
        return (
            f"pass ge_proto_{m.group(1)}_*.txt from the same dump folder (the same graph in "
            "ge.proto text), or the JSON that atc --mode=5 writes from it"
        )
    return WANT
