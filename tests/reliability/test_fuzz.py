"""Property-based fuzzing of the four readers of untrusted bytes (issue 12, "Keep it true").

For any input: no exception other than our own error type, and memory bounded by the input
(peak of Python allocations under `tracemalloc`, each case in-process with a size cap). The
short profile runs in CI; `FUSION_SWITCH_FUZZ=long` runs a long one (thousands of cases per
reader, and a per-case deadline that flags anything super-linear).
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import tracemalloc
from datetime import timedelta
from pathlib import Path

from fusion_switch.catalogue import builtin_catalogue
from fusion_switch.cfg import analyse
from fusion_switch.cfg.model import Context
from fusion_switch.readers import protowire as pw
from fusion_switch.readers.dump import DumpError, read_dump
from fusion_switch.readers.graph_file import GraphError
from fusion_switch.readers.graph_text import parse_graph_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LONG = os.environ.get("FUSION_SWITCH_FUZZ") == "long"
FUZZ = settings(
    max_examples=3000 if LONG else 60,
    deadline=timedelta(seconds=10) if LONG else None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=not LONG,  # CI: the same cases every run; long: new ones each time
)
MB = 1 << 20
SIZE_CAP = 64 * 1024  # characters or bytes per generated input


def bounded(fn, size: int, errors: tuple[type[BaseException], ...]):
    """Run `fn()`; only `errors` may escape, and the allocation peak stays proportional to
    the input (a generous 16 MB floor for caches and the first imports' leftovers)."""
    tracemalloc.start()
    try:
        try:
            result = fn()
        except errors as error:
            result = error
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * MB + 200 * size, (peak, size)
    return result


# --- the cfg parser -------------------------------------------------------------------------

CFG_PIECES = st.sampled_from(
    ['{', '}', '[', ']', ':', ',', '"', '"Switch"', '"GraphFusion"', '"UBFusion"', '"ALL"',
     '"on"', '"off"', '"ConvBatchnormFusionPass"', "\\", "\\u", "\\ud800", "\\udc00", "\\n",
     "d83d", "//", "/*", "*/", "\n", " ", "\t", "\r", "\ufeff", "\x00", "1e9999", "-0", "true",
     "null", "Name:on", "融合", "\udc80", "\udcff"]
)  # fmt: skip
CFG_TEXT = st.one_of(
    st.lists(CFG_PIECES, max_size=200).map("".join),
    st.text(max_size=2000),
    st.integers(0, 20_000).map(lambda n: "[" * n + "]" * (n // 2)),
)
CONTEXT = Context(catalogue=builtin_catalogue(), target=None)


@FUZZ
@given(CFG_TEXT)
def test_cfg_parser_never_fails_and_says_nothing_unencodable(text):
    analysis = bounded(lambda: analyse(text, CONTEXT), len(text), ())
    for finding in analysis.findings:
        assert not (finding.data or {}).get("internal"), finding.message
        # a message must survive being written to a UTF-8 terminal or JSON file (bytes that
        # are not UTF-8 arrive as U+DC80-U+DCFF and go back out as those bytes)
        finding.message.encode("utf-8", "surrogateescape")


# --- the text-graph reader ------------------------------------------------------------------

GRAPH_PIECES = st.sampled_from(
    ["graph", "op", "name", "attr", "key", "value", "list", "i", "s", "dim", "shape", ":",
     " ", "{", "}", "<", ">", "[", "]", ",", ";", "\n", '"', "'", '"x"', '"\\101"', '"\\x4"',
     '"\\u00e9"', '"\\U0010FFFF"', '"\\U00110000"', "\\", '"\\q"', "1", "-1", "0x1F", "017",
     "1.5e3", "9" * 70, "inf", "-nan", "true", "t", "DT_FLOAT", "#", "\udc80", "\x00"]
)  # fmt: skip
GRAPH_TEXT = st.one_of(
    st.lists(GRAPH_PIECES, max_size=300).map("".join),
    st.text(max_size=2000),
    st.integers(0, 5_000).map(lambda n: "graph " + "{ a " * n + "}" * n),
)


@FUZZ
@given(GRAPH_TEXT)
def test_text_graph_reader_raises_only_graph_error(text):
    lines = text.splitlines(keepends=True)
    result = bounded(lambda: parse_graph_text(lines, "fuzz.txt"), len(text), (GraphError,))
    assert isinstance(result, dict | GraphError)
    if isinstance(result, GraphError):
        assert str(result).startswith("fuzz.txt")


# --- the dump header decoder ----------------------------------------------------------------


@st.composite
def messages(draw, depth: int = 0) -> bytes:
    """Protobuf-shaped bytes: DumpData-like field numbers, any wire type, nested messages."""
    writer = pw.MessageWriter()
    for _ in range(draw(st.integers(0, 12))):
        number = draw(st.integers(1, 12))
        kind = draw(st.sampled_from(["varint", "len", "msg", "i32", "i64", "packed"]))
        if kind == "varint":
            writer.varint(number, draw(st.integers(-(2**63), 2**64 - 1)), always=True)
        elif kind == "len":
            writer.raw_bytes(number, draw(st.binary(max_size=40)), always=True)
        elif kind == "msg" and depth < 3:
            writer.message(number, draw(messages(depth + 1)))
        elif kind == "i32":
            writer.fixed32(number, draw(st.integers(0, 2**32 - 1)), always=True)
        elif kind == "i64":
            writer.fixed64(number, draw(st.integers(0, 2**64 - 1)), always=True)
        else:
            writer.packed_varints(number, draw(st.lists(st.integers(0, 2**64 - 1), max_size=70)))
    return writer.getvalue()


@st.composite
def dump_files(draw) -> bytes:
    header = draw(st.one_of(messages(), st.binary(max_size=400)))
    declared = draw(st.one_of(st.just(len(header)), st.integers(0, 2**64 - 1)))
    tail = draw(st.binary(max_size=2000))
    data = struct.pack("<Q", declared) + header + tail
    if draw(st.booleans()):  # cut anywhere
        data = data[: draw(st.integers(0, len(data)))]
    return data[:SIZE_CAP]


def read_everything(path: Path):
    dump = read_dump(path)
    with dump.opened():
        for tensor in dump.tensors():
            with contextlib.suppress(DumpError):
                dump.array(tensor)
    return dump


@FUZZ
@given(dump_files())
def test_dump_reader_raises_only_dump_error(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "Add.op.1.0.123"
        path.write_bytes(data)
        bounded(lambda: read_everything(path), len(data), (DumpError,))


# --- .npy reading ---------------------------------------------------------------------------

DESCRS = st.sampled_from(
    ["<f4", "<f2", ">f8", "<i8", "|u1", "|b1", "<c8", "|O", "<U5", "|V8", "|S3", "<M8[s]",
     "bogus", "", [("a", "<f4")], 7]
)  # fmt: skip
SHAPES = st.one_of(
    st.lists(st.integers(-3, 70), max_size=5).map(tuple),
    st.lists(st.just(1), min_size=30, max_size=70).map(tuple),
    st.lists(st.integers(0, 2**63), max_size=3).map(tuple),
    st.sampled_from(["(2, 2)", "None", "[2]", "(2.5,)", 3]),
)


@st.composite
def npy_files(draw) -> bytes:
    header = {"descr": draw(DESCRS), "fortran_order": draw(st.sampled_from([False, True, 1])),
              "shape": draw(SHAPES)}  # fmt: skip
    text = repr(header).encode("latin1")
    if draw(st.booleans()):
        text = draw(st.binary(max_size=120))  # not a dict at all
    text += b" " * (64 - (10 + len(text) + 1) % 64) + b"\n"
    version = draw(st.sampled_from([b"\x01\x00", b"\x02\x00", b"\x03\x00", b"\x09\x09"]))
    length = (
        struct.pack("<H", len(text)) if version == b"\x01\x00" else struct.pack("<I", len(text))
    )
    data = b"\x93NUMPY" + version + length + text + draw(st.binary(max_size=512))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return data


@FUZZ
@given(npy_files())
def test_npy_reader_raises_only_dump_error(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "op.0.123.npy"
        path.write_bytes(data)
        bounded(lambda: read_everything(path), len(data), (DumpError,))
