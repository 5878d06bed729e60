"""Writing dump files in CANN's binary layout (the inverse of :mod:`.dump`).

Used by the synthetic case generator and by tests that hand-craft dumps; the layout is the one
:mod:`.dump` documents, so whatever this writes, :func:`.dump.read_dump` reads back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import protowire as pw
from .dtypes import code_for_numpy, encode_values
from .dump import _LENGTH_BYTES, KINDS, OriginalOp, TensorKind


@dataclass
class TensorSpec:
    """What :func:`write_dump` writes for one tensor.

    ``data`` is an array (encoded as ``data_type``) or raw bytes. Unset fields default to the
    array's own: data type from its dtype, shape from its shape, ``size`` from the bytes (set
    ``size`` explicitly only to forge inconsistent files in tests).
    """

    data: np.ndarray | bytes
    data_type: int | None = None
    format: int = 2
    shape: Sequence[int] | None = None
    original_shape: Sequence[int] | None = None
    original_op: OriginalOp | None = None
    sub_format: int = 0
    address: int = 0
    size: int | None = None
    type_code: int = 0  # buffer_type / workspace type

    def resolved(self) -> tuple[int, tuple[int, ...], bytes]:
        """(data type, shape, bytes) after defaults."""
        if isinstance(self.data, bytes | bytearray | memoryview):
            data_type = 0 if self.data_type is None else self.data_type
            shape = tuple(self.shape) if self.shape is not None else (len(self.data),)
            return data_type, shape, bytes(self.data)
        array = np.asarray(self.data)
        data_type = self.data_type if self.data_type is not None else code_for_numpy(array.dtype)
        if data_type is None:
            raise ValueError(f"numpy dtype {array.dtype} has no CANN data type; set data_type")
        shape = tuple(self.shape) if self.shape is not None else tuple(array.shape)
        return data_type, shape, encode_values(data_type, array)


def _shape_message(dims: Sequence[int]) -> pw.MessageWriter:
    return pw.MessageWriter().packed_varints(1, dims)


def _original_op_message(op: OriginalOp) -> pw.MessageWriter:
    return (
        pw.MessageWriter()
        .string(1, op.name)
        .varint(2, op.output_index)
        .varint(3, op.data_type)
        .varint(4, op.format)
    )


def _tensor_message(spec: TensorSpec, kind: TensorKind) -> tuple[bytes, bytes]:
    data_type, shape, data = spec.resolved()
    size = len(data) if spec.size is None else spec.size
    msg = pw.MessageWriter()
    if kind == "output":
        msg.varint(1, data_type).varint(2, spec.format).message(3, _shape_message(shape))
        if spec.original_op is not None:
            msg.message(4, _original_op_message(spec.original_op))
        msg.varint(6, size)
        if spec.original_shape is not None:
            msg.message(7, _shape_message(spec.original_shape))
        msg.varint(8, spec.sub_format).varint(9, spec.address)
    elif kind == "input":
        msg.varint(1, data_type).varint(2, spec.format).message(3, _shape_message(shape))
        msg.varint(5, size)
        if spec.original_shape is not None:
            msg.message(6, _shape_message(spec.original_shape))
        msg.varint(7, spec.sub_format).varint(8, spec.address)
    else:  # buffer and space share type=1, data=2, size=3
        msg.varint(1, spec.type_code).varint(3, size)
    return msg.getvalue(), data


def encode_dump(
    op_name: str,
    inputs: Sequence[TensorSpec] = (),
    outputs: Sequence[TensorSpec] = (),
    *,
    buffers: Sequence[TensorSpec] = (),
    spaces: Sequence[TensorSpec] = (),
    version: str = "2.0",
    dump_time: int = 0,
    attrs: Sequence[tuple[str, str]] = (),
    legacy_space_field: bool = False,
) -> bytes:
    """The bytes of a dump file. ``legacy_space_field`` writes spaces as field 7 (old protos)."""
    header = pw.MessageWriter().string(1, version).varint(2, dump_time)
    blobs: dict[str, list[bytes]] = {kind: [] for kind in KINDS}
    encoded: dict[str, list[bytes]] = {kind: [] for kind in KINDS}
    for kind, specs in (
        ("input", inputs),
        ("output", outputs),
        ("buffer", buffers),
        ("space", spaces),
    ):
        for spec in specs:
            message, data = _tensor_message(spec, kind)  # type: ignore[arg-type]
            encoded[kind].append(message)
            blobs[kind].append(data)
    for message in encoded["output"]:
        header.message(3, message)
    for message in encoded["input"]:
        header.message(4, message)
    for message in encoded["buffer"]:
        header.message(5, message)
    header.string(6, op_name)
    if legacy_space_field:
        for message in encoded["space"]:
            header.message(7, message)
    else:
        for name, value in attrs:
            header.message(7, pw.MessageWriter().string(1, name).string(2, value))
        for message in encoded["space"]:
            header.message(8, message)
    body = header.getvalue()
    parts = [len(body).to_bytes(_LENGTH_BYTES, "little"), body]
    for kind in KINDS:
        parts.extend(blobs[kind])
    return b"".join(parts)


def write_dump(
    path: str | os.PathLike,
    op_name: str,
    inputs: Sequence[TensorSpec] = (),
    outputs: Sequence[TensorSpec] = (),
    **options,
) -> Path:
    """Write a dump file in the real binary layout (see :func:`encode_dump` for options)."""
    path = Path(path)
    path.write_bytes(encode_dump(op_name, inputs, outputs, **options))
    return path


# ----------------------------------------------------------------------------- protobuf JSON
