"""One dump of an FFTS+ op from its thread or slice files, as msaccucmp merges them.

Each file holds its own part of every output; the first file in msaccucmp's order
(:mod:`.ffts_slices`) is the base, and its first attribute, a JSON text, says how the outputs
were cut (``outputCutList``: per output, the dims whose count is not 1; the first is the
axis) and, in auto mode (``threadMode`` true), each thread's ranges
(``output_tensor_slice``). Each file's output bytes are shaped by those ranges (auto) or by
its header (manual), joined along the axis (an output not cut is the base's), and stand in one
in-memory :class:`~.dump.DumpFile` beside the base's inputs, with the base's type, format,
address and original shape: every later stage reads it as any dump. Where msaccucmp cannot
merge, or merges parts out of place, :class:`SliceError` says why; we never guess a merge.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from .dtypes import decode_dtype
from .dump import DumpError, DumpFile, DumpTensor, read_dump
from .dumpdir import DumpDir
from .ffts_slices import ShortName, fallback_order, merged_path, misplaced_parts, op_key


class SliceError(DumpError):
    """The FFTS+ files of an op cannot be merged as msaccucmp merges them. ``rows``: msaccucmp
    still writes the op's rows (its own error, not a crash), which the CSV then words as it
    does; otherwise it stops the whole comparison."""

    def __init__(self, path: str, message: str, rows: bool = False) -> None:
        super().__init__(path, message)
        self.rows = rows


def read_op_dump(folder: DumpDir, op_name: str) -> DumpFile | None:
    """The dump msaccucmp compares for ``op_name``: its FFTS+ files merged, else its newest
    file (None: no file). Raises :class:`~.dump.DumpError` (a :class:`SliceError` for files
    that cannot be merged)."""
    mode = folder.ffts_mode(op_name)
    if mode is None:
        location = folder.latest_location(op_name)
        return None if location is None else read_dump(location)
    entries = folder.entries(op_name)
    locations = [os.fspath(name._location) for name in entries]
    if isinstance(mode, str):
        raise SliceError(locations[-1], _cannot(mode))
    listed = [os.path.basename(location) for location in locations]
    misplaced = misplaced_parts(listed, [name.real_name for name in entries], mode)
    return merge_slices([read_dump(location) for location in locations], locations, misplaced)


def op_dump_location(folder: DumpDir, op_name: str) -> str | None:
    """The text that names ``op_name``'s dump (its cache key): msaccucmp's ``…*`` path of a
    merged op, else its newest file."""
    if folder.ffts_mode(op_name) is None:
        return folder.latest_location(op_name)
    return merged_path(os.fspath(folder.entries(op_name)[0]._location))


def _cannot(why: str, renamed: bool = True) -> str:
    """``why`` and what it means for the op; ``renamed``: with the advice to give the files
    CANN's names back (not for numeric names of mapping.csv: those are CANN's own)."""
    fix = "; rename the dump files as CANN wrote them or dump the op again" if renamed else ""
    return f"{why}. The op's FFTS+ files are not merged and it is not compared{fix}"


def merge_slices(
    dumps: list[DumpFile], locations: list[str], misplaced: str | None = None
) -> DumpFile:
    """The merged dump of ``dumps`` (their files ``locations``, in msaccucmp's order);
    ``misplaced``: why that order joins the parts out of place (:func:`.misplaced_parts`),
    said instead of such a merge."""
    base, first = dumps[0], locations[0]
    attr = _slicing(base, first)
    for dump, location in zip(dumps[1:], locations[1:], strict=True):
        if dump.attrs and "threadMode" not in (_attribute(dump) or {}):  # msaccucmp reads all
            raise SliceError(location, _cannot(_NOT_JSON))
    cuts = [[dim for dim, count in enumerate(entry) if count != 1] for entry in attr["cuts"]]
    if not any(cuts):  # no cut axis: msaccucmp compares one file as it is
        try:
            return dumps[fallback_order(locations)[-1]]
        except ShortName as error:
            short = locations[error.position]
            raise SliceError(short, _cannot(str(error), renamed=False)) from None
    if misplaced is not None:
        raise SliceError(first, _cannot(misplaced, renamed=False))
    pieces = [
        _shaped_outputs(dump, location, position, attr["auto"])
        for position, (dump, location) in enumerate(zip(dumps, locations, strict=True))
    ]
    if any(len(outputs) != len(pieces[0]) for outputs in pieces):
        counts = [len(outputs) for outputs in pieces]
        why = f"the FFTS+ files hold {counts} outputs, not one count"
        raise SliceError(first, _cannot(why), rows=True)
    if len(cuts) > len(base.outputs):
        raise SliceError(
            first,
            _cannot(f"outputCutList has {len(cuts)} entries for {len(base.outputs)} "
                    "output(s)"),
        )  # fmt: skip
    merged = []
    for index, axes in enumerate(cuts):  # outputs past outputCutList's entries are left out
        parts = [outputs[index] for outputs in pieces]
        merged.append(_joined(parts, axes, first))
    return _merged_dump(base, merged, merged_path(first))


_NOT_JSON = (
    "its first attribute is not the JSON of threadMode and outputCutList that CANN writes; "
    "msaccucmp stops on it"
)


def _attribute(dump: DumpFile) -> dict | None:
    """The file's first attribute as the JSON object msaccucmp reads, else None."""
    try:
        attr = json.loads(dump.attrs[0][1])
    except (IndexError, ValueError):
        return None
    return attr if isinstance(attr, dict) else None


def _slicing(base: DumpFile, first: str) -> dict:
    """The base's slicing attribute: its mode and cut list, or a :class:`SliceError`."""
    if not base.attrs:
        raise SliceError(
            first,
            _cannot("the first file holds no slicing attribute (the JSON with threadMode "
                    "and outputCutList that CANN writes); msaccucmp stops on it"),
        )  # fmt: skip
    attr = _attribute(base)
    if attr is None or "threadMode" not in attr or "outputCutList" not in attr:
        raise SliceError(first, _cannot(_NOT_JSON))
    cuts = attr["outputCutList"] or []
    if not isinstance(cuts, list) or not all(isinstance(entry, list) for entry in cuts):
        raise SliceError(first, _cannot(f"outputCutList {cuts!r} is no list of lists"))
    return {"auto": bool(attr["threadMode"]), "cuts": cuts}


def _shaped_outputs(dump: DumpFile, location: str, position: int, auto: bool) -> list:
    """Each output's stored elements (one row of bytes each) shaped as msaccucmp shapes them:
    by the file's own ``output_tensor_slice`` ranges of ``position`` (auto), by its header."""
    shapes = _auto_shapes(dump, location, position, len(dump.outputs)) if auto else None
    shaped = []
    for index, tensor in enumerate(dump.outputs):
        info = decode_dtype(tensor.data_type)
        if tensor.data_type == 0 or not info.supported or info.bits % 8:
            why = f"output {index} is {info.name}, whose FFTS+ parts are not merged"
            raise SliceError(location, why)
        width = info.bits // 8
        dims = tuple(tensor.shape) or ((tensor.size,) if tensor.size else ())
        shape = shapes[index] if shapes is not None else dims
        if not shape:
            raise SliceError(location, _cannot(f"output {index} has no shape; msaccucmp stops"))
        count = min(math.prod(dims), tensor.size // width)
        if count == 0:
            raise SliceError(location, _cannot(f"output {index} holds no element"))
        if count != math.prod(shape):
            raise SliceError(
                location,
                f"output {index} holds {count} element(s) where its part's shape "
                f"{list(shape)} needs {math.prod(shape)}: the op's FFTS+ files are not merged "
                "and it is not compared (msaccucmp writes its rows without numbers); dump the "
                "op again",
                rows=True,
            )
        stored = np.frombuffer(dump.raw_bytes(tensor), np.uint8, count * width)
        shaped.append((tensor.data_type, stored.reshape(*shape, width)))
    return shaped


def _auto_shapes(dump: DumpFile, location: str, position: int, outputs: int) -> list:
    """Thread ``position``'s part of each output (``higher - lower`` per range), read from the
    file's own attribute, or a :class:`SliceError` where msaccucmp stops."""
    try:
        ranges = json.loads(dump.attrs[0][1])["output_tensor_slice"][position]
        shapes = [tuple(r["higher"] - r["lower"] for r in entry) for entry in ranges]
    except (IndexError, KeyError, TypeError, ValueError):
        shapes = []
    if len(shapes) < outputs:
        raise SliceError(
            location,
            _cannot(f"its attribute gives no output_tensor_slice ranges of thread {position} "
                    f"for its {outputs} output(s); msaccucmp stops on it"),
        )  # fmt: skip
    return shapes


def _joined(parts: list, axes: list[int], first: str) -> tuple[int, np.ndarray]:
    """One output's parts joined along its first cut axis (not cut: the base's part)."""
    data_type = parts[0][0]
    if not axes:
        return parts[0]
    if any(code != data_type for code, _ in parts):
        raise SliceError(first, _cannot("the files' parts of one output differ in type"))
    arrays = [array for _, array in parts]  # each with a last axis of its element's bytes
    try:
        if axes[0] >= arrays[0].ndim - 1:
            raise ValueError(axes[0])
        return data_type, np.concatenate(arrays, axis=axes[0])
    except ValueError:  # shapes that do not join, an axis past the dims
        shapes = [list(array.shape[:-1]) for array in arrays]
        raise SliceError(
            first, _cannot(f"parts of shapes {shapes} do not join along axis {axes[0]}")
        ) from None


def _merged_dump(base: DumpFile, merged: list, path: str) -> DumpFile:
    """An in-memory dump: the base's inputs, then the merged outputs, held as its bytes."""
    chunks, inputs, outputs, offset = [], [], [], 0
    for tensor in base.inputs:
        data = base.raw_bytes(tensor)
        inputs.append(_moved(tensor, offset, len(data), tensor.shape, tensor.sub_format))
        chunks.append(data)
        offset += len(data)
    for index, (_, array) in enumerate(merged):
        data = np.ascontiguousarray(array).tobytes()
        outputs.append(_moved(base.outputs[index], offset, len(data), array.shape[:-1], 0))
        chunks.append(data)
        offset += len(data)
    content = b"".join(chunks)
    return DumpFile(
        path, op_key(base.op_name), base.version, base.dump_time, inputs, outputs,
        attrs=list(base.attrs), file_size=len(content), header_len=base.header_len or 1,
        _content=content,
    )  # fmt: skip


def _moved(tensor: DumpTensor, offset: int, size: int, shape: tuple, sub_format: int) -> DumpTensor:
    """``tensor`` with its bytes at ``offset`` of the merged dump (msaccucmp's merged outputs
    keep no sub-format)."""
    return DumpTensor(
        kind=tensor.kind, index=tensor.index, data_type=tensor.data_type, format=tensor.format,
        shape=tuple(shape), original_shape=tensor.original_shape, size=size, data_offset=offset,
        original_op=tensor.original_op, sub_format=sub_format, address=tensor.address,
        raw_format=tensor.raw_format, recorded=tensor.recorded,
    )  # fmt: skip
