"""Binary dump files: read the header, read one tensor at a time (writing: :mod:`.dump_write`).

Layout (CANN "binary" dump, msaccucmp ``-v 2``)::

    uint64 little-endian header_len | DumpData protobuf (header_len bytes) |
    input[0] bytes, input[1] ..., output[0] ..., buffer[0] ..., space[0] ...

Each tensor occupies exactly its ``size`` field; there is no padding. :func:`read_dump` decodes
only the header and computes where every tensor's bytes start; :meth:`DumpFile.array` then reads
one tensor. Invariants: nothing is read past the end of the file, no buffer larger than the file
is allocated, and every problem is a :class:`DumpError` naming the file and what is wrong.

Proto field numbers follow the newest ``dump_task.proto`` (formats.md 1.2). Older protos agree
except DumpData field 7, which is ``attr`` (OpAttr) in new files and ``space`` (Workspace) in
old ones: a field-7 entry carrying a varint ``type`` or ``size`` is taken as a Workspace.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np

from . import protowire as pw
from .dtypes import DtypeInfo, code_for_numpy, data_type_name, decode_dtype
from .formats import format_name, primary_format

try:
    from . import _header  # the whole header decoded in C (_header.c); optional
except ImportError:  # pragma: no cover - exercised on machines without a C compiler
    _header = None

TensorKind = Literal["input", "output", "buffer", "space"]
KINDS: tuple[TensorKind, ...] = ("input", "output", "buffer", "space")
_LENGTH_BYTES = 8
NPY_FORMAT = 40  # msaccucmp tags tensors read from .npy files as FORMAT_RESERVED
# Bounds on what a header may declare (no operator comes near them; a corrupt or hostile
# header does): tensors plus other fields of one DumpData, and dimensions of one tensor.
MAX_HEADER_FIELDS = 100_000
MAX_DIMS = 32


_TOO_SHORT = "a dump needs an 8-byte header length followed by the header"


class DumpError(Exception):
    """A dump file that cannot be read as claimed. ``str()`` names the file and the problem.
    ``file_size``: given for a file too short to hold a header (msaccucmp words 0 apart)."""

    def __init__(self, path: str | os.PathLike, message: str, file_size: int | None = None):
        self.path, self.message, self.file_size = str(path), message, file_size
        super().__init__(f"{self.path}: {message}")


class UnsupportedDtypeError(DumpError):
    """The tensor is well-formed but its data type cannot be compared numerically."""


@dataclass(frozen=True)
class OriginalOp:
    """The framework op an output stands for (``OpOutput.original_op``)."""

    name: str = ""
    output_index: int = 0
    data_type: int = 0
    format: int = 0


@dataclass(frozen=True)
class DumpTensor:
    """One tensor listed in a dump header and where its bytes are in the file.

    ``format`` is the primary format (low byte of ``raw_format``); ``sub_format`` is the proto
    field, or the high bits of ``raw_format`` when the field is absent. For buffers and spaces
    ``type_code`` holds ``buffer_type`` / workspace ``type``. ``data_offset`` is the absolute byte
    position of the tensor's first byte in the file.
    """

    kind: TensorKind
    index: int
    data_type: int = 0
    format: int = 2
    shape: tuple[int, ...] = ()
    original_shape: tuple[int, ...] = ()
    size: int = 0
    data_offset: int = 0
    original_op: OriginalOp | None = None
    sub_format: int = 0
    address: int = 0
    raw_format: int = 2
    addr_offset: int = 0
    arg_index: int = 0
    input_type: int = 0
    type_code: int = 0
    dim_range: tuple[tuple[int, int], ...] = ()
    # the fields the header really holds for this tensor (others read as proto3 defaults):
    # exception dumps record only ``size``, so DT_UNDEFINED/NCHW there mean "not recorded"
    recorded: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @property
    def has_type_and_shape(self) -> bool:
        return bool({"data_type", "shape"} & self.recorded)

    @property
    def name(self) -> str:
        """``output:0`` style label used in messages and CSV tensor indexes."""
        return f"{self.kind}:{self.index}"

    @property
    def dtype(self) -> DtypeInfo:
        return decode_dtype(self.data_type)

    @property
    def data_type_name(self) -> str:
        return data_type_name(self.data_type)

    @property
    def format_name(self) -> str:
        return format_name(self.format, len(self.shape))

    @property
    def host_shape(self) -> tuple[int, ...]:
        """The framework-side shape: ``original_shape`` when present, else ``shape``."""
        return self.original_shape or self.shape


@dataclass
class DumpFile:
    """A dump file's header; tensor bytes are read on demand by :meth:`array`. ``path`` is the
    path :func:`read_dump` was given: text stays text (the measure stage reads by text)."""

    path: Path | str
    op_name: str = ""
    version: str = ""
    dump_time: int = 0
    inputs: list[DumpTensor] = field(default_factory=list)
    outputs: list[DumpTensor] = field(default_factory=list)
    buffers: list[DumpTensor] = field(default_factory=list)
    spaces: list[DumpTensor] = field(default_factory=list)
    attrs: list[tuple[str, str]] = field(default_factory=list)
    dfx_message: str = ""
    file_size: int = 0
    header_len: int = 0
    npy_dtype: np.dtype | None = None  # set for .npy dumps: the stored numpy dtype
    npy_fortran: bool = False
    _handle: BinaryIO | None = field(default=None, repr=False, compare=False)
    # the whole file, when it is small enough to be read in one go (see read_dump)
    _content: bytes | None = field(default=None, repr=False, compare=False)

    def tensors(self) -> Iterator[DumpTensor]:
        """All tensors in file order (inputs, outputs, buffers, spaces)."""
        yield from self.inputs
        yield from self.outputs
        yield from self.buffers
        yield from self.spaces

    def attr_json(self) -> object | None:
        """``attrs[0]`` value parsed as JSON, as msaccucmp reads FFTS+ slicing info; else None."""
        if not self.attrs:
            return None
        try:
            return json.loads(self.attrs[0][1])
        except ValueError:
            return None

    def element_shape(self, tensor: DumpTensor) -> tuple[int, ...]:
        """Shape :meth:`array` returns, as msaccucmp decodes it: ``DT_UNDEFINED`` with bytes is
        ``(size,)`` int8; an empty shape is a scalar (its first element), or ``(0,)`` when
        ``size`` cannot hold one element."""
        if tensor.data_type == 0 and tensor.size and self.npy_dtype is None:
            return (tensor.size,)
        if not tensor.shape:
            itemsize = self.npy_dtype.itemsize if self.npy_dtype is not None else None
            needed = itemsize if itemsize is not None else tensor.dtype.nbytes(1)
            return () if tensor.size >= needed else (0,)
        return tensor.shape

    def array(self, tensor: DumpTensor, *, copy: bool = True) -> np.ndarray:
        """Decode one tensor, shaped. Reads exactly the bytes it needs and never more than
        ``tensor.size``; trailing bytes beyond ``prod(shape)`` elements are ignored.

        ``copy=False``: the array may be a read-only view of the file's bytes held in memory (no
        copy; it keeps those bytes alive), for a caller that only reads it."""
        info = tensor.dtype
        if self.npy_dtype is None and not info.supported:
            raise UnsupportedDtypeError(self.path, f"{tensor.name}: {info.reason}")
        shape = self.element_shape(tensor)
        if len(shape) > MAX_DIMS:
            raise DumpError(
                self.path,
                f"{tensor.name}: shape has {len(shape)} dimensions (at most {MAX_DIMS} can be "
                "compared); corrupt header?",
            )
        count = math.prod(shape)
        if count == 0:
            dtype = self.npy_dtype if self.npy_dtype is not None else info.numpy
            try:
                return np.empty(shape, dtype=dtype)
            except (ValueError, OverflowError):
                raise DumpError(
                    self.path, f"{tensor.name}: shape {list(shape)} is not a valid array shape"
                ) from None
        if self.npy_dtype is not None:
            needed = count * self.npy_dtype.itemsize
        else:
            needed = info.nbytes(count)
        if needed > tensor.size:
            raise DumpError(
                self.path,
                f"{tensor.name}: shape {list(shape)} of {info.name} needs {needed} bytes "
                f"but the header gives it only {tensor.size}",
            )
        content = self._content
        if not copy and content is not None and self.npy_dtype is None and info.plain:
            end = tensor.data_offset + needed
            if end <= len(content):  # the bytes read with the header: one view, no decoding
                return np.frombuffer(content, info.little, count, tensor.data_offset).reshape(shape)
        raw = self._read_bytes(tensor, needed, copy)
        if self.npy_dtype is not None:
            values = raw.view(self.npy_dtype)
            order = "F" if self.npy_fortran else "C"
            return values.reshape(shape, order=order)
        return info.decode(raw, count).reshape(shape)

    def raw_bytes(self, tensor: DumpTensor) -> bytes:
        """The tensor's ``size`` bytes exactly as stored."""
        return self._read_bytes(tensor, tensor.size).tobytes()

    @contextmanager
    def opened(self) -> Iterator[DumpFile]:
        """Keep the file open while reading several tensors (one open instead of one each).
        A file read whole by :func:`read_dump` needs no handle."""
        if self._handle is not None or self._content is not None:
            yield self
            return
        try:
            self._handle = open(self.path, "rb")  # noqa: SIM115 - closed below
        except OSError as error:
            raise DumpError(self.path, f"cannot read: {error.strerror or error}") from None
        try:
            yield self
        finally:
            handle, self._handle = self._handle, None
            handle.close()

    def _read_bytes(self, tensor: DumpTensor, nbytes: int, copy: bool = True) -> np.ndarray:
        end = tensor.data_offset + nbytes
        if end > self.file_size:
            raise DumpError(
                self.path,
                f"{tensor.name}: bytes {tensor.data_offset}..{end} "
                f"lie beyond the end of the file ({self.file_size} bytes)",
            )
        content = self._content
        if content is not None and end <= len(content):
            view = np.frombuffer(content, np.uint8, nbytes, tensor.data_offset)
            return view.copy() if copy else view
        buffer = np.empty(nbytes, dtype=np.uint8)
        try:
            if self._handle is not None:
                self._handle.seek(tensor.data_offset)
                got = self._handle.readinto(memoryview(buffer))
            else:
                with open(self.path, "rb") as handle:
                    handle.seek(tensor.data_offset)
                    got = handle.readinto(memoryview(buffer))
        except OSError as error:
            raise DumpError(self.path, f"cannot read {tensor.name}: {error.strerror}") from None
        if got != nbytes:
            raise DumpError(
                self.path,
                f"{tensor.name}: file ended after {got} of {nbytes} bytes at offset "
                f"{tensor.data_offset} (was it truncated after the header was read?)",
            )
        return buffer


# ----------------------------------------------------------------------------- header decoding


def _header_error(path: str | os.PathLike, error: pw.WireError) -> DumpError:
    offset = error.offset
    return DumpError(
        path,
        f"dump header is not a valid DumpData message: {error.message} "
        f"(header byte {offset}, file offset {offset + _LENGTH_BYTES})",
    )


def _int(f: pw.Field, what: str) -> int:
    pw.expect(f, pw.VARINT, what)
    return int(f.value)  # type: ignore[arg-type]


def _sub(buf: memoryview, f: pw.Field, what: str) -> Iterator[pw.Field]:
    """Fields of the sub-message ``f``, with offsets absolute in ``buf``."""
    pw.expect(f, pw.LEN, what)
    return pw.iter_fields(buf, f.start, f.end)


_WIRE = {pw.VARINT: "varint", pw.LEN: "length-delimited", pw.I64: "64-bit", pw.I32: "32-bit"}


def _need(wire_type: int, expected: int, what: str, number: int, at: int) -> None:
    if wire_type != expected:
        raise pw.WireError(
            f"{what} (field {number}) should be {_WIRE[expected]}, found "
            f"{_WIRE.get(wire_type, wire_type)}",
            at,
        )


def _shape(buf: bytes, start: int, end: int) -> tuple[int, ...]:
    dims: list[int] = []
    for number, wire_type, a, b in pw.scan(buf, start, end):
        if number == 1:
            if wire_type == pw.LEN:
                dims.extend(pw.unpack_varints(buf, a, b))
            else:
                _need(wire_type, pw.VARINT, "shape.dim", number, b)
                dims.append(a)
    return tuple(dims)


def _original_op(buf: bytes, start: int, end: int) -> OriginalOp:
    values: dict[str, object] = {}
    for number, wire_type, a, b in pw.scan(buf, start, end):
        if number == 1:
            _need(wire_type, pw.LEN, "original_op.name", number, b)
            values["name"] = _text(buf, a, b)
        elif 2 <= number <= 4:
            _need(wire_type, pw.VARINT, "original_op field", number, b)
            if number == 2:
                values["output_index"] = a & 0xFFFFFFFF
            else:
                values["data_type" if number == 3 else "format"] = pw.as_int32(a)
    return OriginalOp(**values)  # type: ignore[arg-type]


def _text(buf: bytes, start: int, end: int) -> str:
    return buf[start:end].decode("utf-8", errors="replace")


# field numbers of OpOutput / OpInput (the only difference is the numbering)
_OUTPUT_FIELDS = {
    1: "data_type",
    2: "format",
    3: "shape",
    4: "original_op",
    5: "data",
    6: "size",
    7: "original_shape",
    8: "sub_format",
    9: "address",
    10: "dim_range",
    11: "arg_index",
}
_INPUT_FIELDS = {
    1: "data_type",
    2: "format",
    3: "shape",
    4: "data",
    5: "size",
    6: "original_shape",
    7: "sub_format",
    8: "address",
    9: "offset",
    10: "arg_index",
    11: "input_type",
}
_BUFFER_FIELDS = {1: "type", 2: "data", 3: "size"}
_SPACE_FIELDS = {1: "type", 2: "data", 3: "size", 4: "arg_index"}
_ATTR_FIELDS = {1: "name", 2: "value"}
_MESSAGE_FIELDS = {
    "input": _INPUT_FIELDS,
    "output": _OUTPUT_FIELDS,
    "buffer": _BUFFER_FIELDS,
    "space": _SPACE_FIELDS,
}
_MESSAGE_NAMES = {"shape", "original_shape", "original_op", "dim_range", "data"}


def _decode_entry(buf: bytes, start: int, end: int, kind: TensorKind, what: str) -> dict:
    """Decode one OpInput/OpOutput/OpBuffer/Workspace into a dict of named values."""
    names = _MESSAGE_FIELDS[kind]
    values: dict[str, object] = {}
    for number, wire_type, a, b in pw.scan(buf, start, end):
        name = names.get(number)
        if name is None:
            continue
        # the checks are inlined: the field label is only built for an error message
        if name not in _MESSAGE_NAMES:
            if wire_type != pw.VARINT:
                _need(wire_type, pw.VARINT, f"{what}.{name}", number, b)
            values[name] = a
            continue
        if wire_type != pw.LEN:
            _need(wire_type, pw.LEN, f"{what}.{name}", number, b)
        if name == "shape" or name == "original_shape":
            values[name] = _shape(buf, a, b)
        elif name == "original_op":
            values[name] = _original_op(buf, a, b)
        elif name == "data":
            values[name] = (a, b - a)
        else:  # dim_range
            bounds = [0, 0]
            for sub_number, sub_type, value, at in pw.scan(buf, a, b):
                if sub_number in (1, 2):
                    _need(sub_type, pw.VARINT, "dim_range", sub_number, at)
                    bounds[sub_number - 1] = value
            values.setdefault(name, []).append(tuple(bounds))  # type: ignore[union-attr]
    return values


def _is_workspace(buf: bytes, start: int, end: int) -> bool:
    """Old protos put Workspace{type=1, data=2, size=3} in DumpData field 7, new ones OpAttr."""
    return any(
        wire_type == pw.VARINT and number in (1, 3)
        for number, wire_type, _, _ in pw.scan(buf, start, end)
    )


@dataclass
class _Header:
    version: str = ""
    dump_time: int = 0
    op_name: str = ""
    dfx_message: str = ""
    entries: dict[str, list[dict[str, object]]] = field(
        default_factory=lambda: {kind: [] for kind in KINDS}
    )
    attrs: list[tuple[str, str]] = field(default_factory=list)


_ENTRY_KINDS: dict[int, TensorKind] = {3: "output", 4: "input", 5: "buffer", 8: "space"}
_STRING_FIELDS = {1: "version", 6: "op_name", 9: "dfx_message"}


def _decode_header(header: bytes) -> _Header:
    out = _Header()
    counts = dict.fromkeys(KINDS, 0)
    for number, wire_type, a, b in pw.scan(header, 0, len(header), MAX_HEADER_FIELDS):
        if number in _STRING_FIELDS:
            _need(wire_type, pw.LEN, _STRING_FIELDS[number], number, b)
            setattr(out, _STRING_FIELDS[number], _text(header, a, b))
        elif number == 2:
            _need(wire_type, pw.VARINT, "dump_time", number, b)
            out.dump_time = a
        elif number in _ENTRY_KINDS or number == 7:
            kind = _ENTRY_KINDS.get(number, "space")
            if number == 7:
                _need(wire_type, pw.LEN, "attr", number, b)
                if not _is_workspace(header, a, b):
                    name = value = ""
                    for sub_number, sub_type, c, d in pw.scan(header, a, b):
                        if sub_number in (1, 2):
                            _need(sub_type, pw.LEN, "attr field", sub_number, d)
                            if sub_number == 1:
                                name = _text(header, c, d)
                            else:
                                value = _text(header, c, d)
                    out.attrs.append((name, value))
                    continue
            label = f"{kind}[{counts[kind]}]"
            counts[kind] += 1
            if wire_type != pw.LEN:
                _need(wire_type, pw.LEN, label, number, b)
            out.entries[kind].append(_decode_entry(header, a, b, kind, label))
    return out


def _make_tensor(
    kind: TensorKind, index: int, values: dict[str, object], data_offset: int, size: int
) -> DumpTensor:
    raw_format = int(values.get("format", 0))  # type: ignore[arg-type]
    raw_format = pw.as_int32(raw_format) & 0xFFFFFFFF
    sub_format = pw.as_int32(int(values.get("sub_format", 0)))  # type: ignore[arg-type]
    if not sub_format and raw_format > 0xFF:
        sub_format = (raw_format >> 8) & 0xFFFF
    return DumpTensor(
        kind=kind,
        index=index,
        data_type=pw.as_int32(int(values.get("data_type", 0))),  # type: ignore[arg-type]
        format=primary_format(raw_format),
        raw_format=raw_format,
        shape=tuple(values.get("shape", ())),  # type: ignore[arg-type]
        original_shape=tuple(values.get("original_shape", ())),  # type: ignore[arg-type]
        size=size,
        data_offset=data_offset,
        original_op=values.get("original_op"),  # type: ignore[arg-type]
        sub_format=sub_format,
        address=int(values.get("address", 0)),  # type: ignore[arg-type]
        addr_offset=int(values.get("offset", 0)),  # type: ignore[arg-type]
        arg_index=int(values.get("arg_index", 0)) & 0xFFFFFFFF,  # type: ignore[arg-type]
        input_type=int(values.get("input_type", 0)) & 0xFFFFFFFF,  # type: ignore[arg-type]
        type_code=pw.as_int32(int(values.get("type", 0))),  # type: ignore[arg-type]
        dim_range=tuple(values.get("dim_range", ())),  # type: ignore[arg-type]
        recorded=frozenset(values),
    )


# A file up to this size is read whole, in one system call, and its tensors decoded from
# memory: most dumps of a network are this small, and opening the file again for each tensor
# cost more than decoding it. (The measuring processes cache headers: see
# compare.workers._HEADER_CACHE_BYTES for the bytes those may hold.)
SMALL_FILE_BYTES = 128 * 1024


def read_dump(path: str | os.PathLike) -> DumpFile:
    """Read a dump file's header (binary layout, or ``.npy``). Raises :class:`DumpError`.
    ``path``: a Path, or text, which is kept as text (no Path made: issue 16)."""
    if type(path) is not str and not isinstance(path, Path):
        path = Path(path)
    text = path if type(path) is str else os.fspath(path)
    if text.endswith(".npy") and Path(text).suffix == ".npy":  # not a file named ".npy"
        return read_npy_dump(path)
    try:
        # os.open/os.read, not open(): no buffered file object for one or two reads (about a
        # third of the time spent on a typical small dump before its header is decoded)
        fd = os.open(text, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            file_size = os.fstat(fd).st_size
            if file_size <= _LENGTH_BYTES:
                raise DumpError(path, f"file is {file_size} bytes; {_TOO_SHORT}", file_size)
            content = _read_up_to(fd, file_size) if file_size <= SMALL_FILE_BYTES else None
            if content is not None:
                head = content[:_LENGTH_BYTES]
            else:
                head = _read_up_to(fd, _LENGTH_BYTES)
            header_len = int.from_bytes(head, "little")
            if header_len > file_size - _LENGTH_BYTES:
                raise DumpError(
                    path,
                    f"header length {header_len} (first 8 bytes) exceeds the {file_size - 8} "
                    "bytes that follow; not a binary dump file or truncated",
                )
            if content is not None:
                header = content[_LENGTH_BYTES : _LENGTH_BYTES + header_len]
            else:
                header = _read_up_to(fd, header_len)
        finally:
            os.close(fd)
    except OSError as error:
        raise DumpError(path, f"cannot read: {error.strerror or error}") from None
    if len(header) != header_len:
        raise DumpError(path, f"file ended inside the {header_len}-byte header")
    dump = _build_dump_file(path, header, header_len, file_size)
    _sizes_add_up(dump)
    dump._content = content
    return dump


def _sizes_add_up(dump: DumpFile) -> None:
    """The tensors after the header fill the file to its end. msaccucmp checks only that they
    do not run past it; a damaged size field (1024 read as 512) then shifts every later
    tensor, decoded from the wrong bytes without a word (a review of issue 16's readers)."""
    start = _LENGTH_BYTES + dump.header_len
    body = 0
    for kind in (dump.inputs, dump.outputs, dump.buffers, dump.spaces):
        for tensor in kind:
            if tensor.data_offset >= start:  # not an old dump's bytes inside the header
                body += tensor.size
    left = dump.file_size - start - body
    if left:
        raise DumpError(
            dump.path,
            f"the header's tensor sizes add up to {body} bytes, and the file has {left} "
            "byte(s) after its last tensor: a size in the header is damaged; dump it again",
        )


def _read_up_to(fd: int, count: int) -> bytes:
    """``count`` bytes from ``fd``, fewer only at the end of the file (a network file system
    may answer one read with less than was asked)."""
    data = os.read(fd, count)
    if len(data) == count or not data:
        return data
    parts = [data]
    count -= len(data)
    while count > 0:
        more = os.read(fd, count)
        if not more:
            break
        parts.append(more)
        count -= len(more)
    return b"".join(parts)


def _build_dump_file(path: Path | str, header: bytes, header_len: int, file_size: int) -> DumpFile:
    if _header is not None:
        decoded = _header.decode(header, file_size, DumpTensor, OriginalOp)
        if decoded is not None:
            version, dump_time, op_name, dfx_message, attrs, inputs, outputs, buffers, spaces = (
                decoded
            )
            return DumpFile(
                path, op_name, version, dump_time, inputs, outputs, buffers, spaces, attrs,
                dfx_message, file_size, header_len,
            )  # fmt: skip
    return _build_dump_file_python(path, header, header_len, file_size)


def _build_dump_file_python(
    path: Path | str, header: bytes, header_len: int, file_size: int
) -> DumpFile:
    """:func:`_build_dump_file` in Python: the definition ``_header.c`` reproduces, and the
    path that raises the precise error for a header the compiled decoder turned down."""
    try:
        decoded = _decode_header(header)
    except pw.WireError as error:
        raise _header_error(path, error) from None
    dump = DumpFile(
        path=path,
        op_name=decoded.op_name,
        version=decoded.version,
        dump_time=decoded.dump_time,
        attrs=decoded.attrs,
        dfx_message=decoded.dfx_message,
        file_size=file_size,
        header_len=header_len,
    )
    position = _LENGTH_BYTES + header_len
    lists = {
        "input": dump.inputs,
        "output": dump.outputs,
        "buffer": dump.buffers,
        "space": dump.spaces,
    }
    for kind in KINDS:
        for index, values in enumerate(decoded.entries[kind]):
            size = int(values.get("size", 0))  # type: ignore[arg-type]
            inline = values.get("data")
            if inline is not None and not size:
                # Old "protobuf dump" style: the bytes sit inside the header itself.
                start, length = inline  # type: ignore[misc]
                tensor = _make_tensor(kind, index, values, _LENGTH_BYTES + start, length)
            else:
                if size > file_size - position:
                    raise DumpError(
                        path,
                        f"{kind}:{index} claims {size} bytes at offset {position}, but the file "
                        f"has only {file_size - position} bytes left ({file_size} in all); "
                        "truncated or corrupt",
                    )
                tensor = _make_tensor(kind, index, values, position, size)
                position += size
            lists[kind].append(tensor)
    return dump


# ----------------------------------------------------------------------------- .npy dumps


def _npy_problem(error: Exception) -> str:
    """numpy's header error in words a user can act on: its parser's own text can be the repr
    of a syntax-tree node (``<ast.Call object at 0x...>``)."""
    text = str(error)
    unparsed = isinstance(error, SyntaxError) or type(error).__name__ == "TokenError"
    if unparsed or "malformed node" in text or "parse header" in text:
        text = "its header is not the plain dict numpy writes"
    text = re.sub(r"<[^<>]* object at 0x[0-9a-fA-F]+>", "an expression", text)
    return f"{text}; write it again with numpy.save, or compare the run's binary dumps"


def read_npy_dump(path: str | os.PathLike) -> DumpFile:
    """A ``.npy`` dump as a DumpFile with a single output (msaccucmp's view of such files)."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            file_size = os.fstat(handle.fileno()).st_size
            try:
                version = np.lib.format.read_magic(handle)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
            except (OSError, MemoryError):
                raise
            except Exception as error:  # numpy's header parser: ValueError, TokenError, ...
                raise DumpError(path, f"not a valid .npy file: {_npy_problem(error)}") from None
            offset = handle.tell()
    except OSError as error:
        raise DumpError(path, f"cannot read: {error.strerror or error}") from None
    if dtype.hasobject:
        raise DumpError(path, "holds Python objects; only numeric .npy dumps can be compared")
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise DumpError(path, f"not a valid .npy file: negative dimension in shape {list(shape)}")
    if len(shape) > MAX_DIMS:
        raise DumpError(
            path, f"shape has {len(shape)} dimensions (at most {MAX_DIMS} can be compared)"
        )
    size = math.prod(shape) * dtype.itemsize
    if size > file_size - offset:
        raise DumpError(
            path,
            f"shape {list(shape)} of {dtype} needs {size} bytes but only "
            f"{file_size - offset} follow the header",
        )
    code = code_for_numpy(dtype)
    tensor = DumpTensor(
        kind="output",
        index=0,
        data_type=code if code is not None else 0,
        format=NPY_FORMAT,
        raw_format=NPY_FORMAT,
        shape=shape,
        size=size,
        data_offset=offset,
    )
    if code is None:
        raise DumpError(path, f"numpy dtype {dtype} has no CANN data type")
    return DumpFile(
        path=path,
        outputs=[tensor],
        file_size=file_size,
        header_len=offset,
        version="npy",
        npy_dtype=dtype,
        npy_fortran=bool(fortran),
    )
