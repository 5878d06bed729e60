"""Read only the dump tensors a replay needs, each file decoded once, in host layout.

A replay needs the fused op's own fusion-on dump (inputs and outputs) and the fusion-off dumps of
its original ops (parameters, and the noise floor). Everything comes back as float64 arrays in
the framework (host) layout; device formats are converted with :mod:`readers.layout`. (Outputs
kept in their dumped fp16/fp32 were tried for the scores, issue 16: numpy's mixed-dtype
subtraction and fp16 reductions cost more than the float64 copy they save.)

A tensor that cannot be read (empty or truncated file, zero-length header, a 0 in its shape) is
*missing evidence*: :class:`MissingEvidence` names the file and the problem, so that a verdict
that needed it says so instead of passing silently.
"""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..compare.metrics.native import decode_wide, stored_source, stored_tensor
from ..readers.dump import NPY_FORMAT, DumpError, DumpFile, DumpTensor
from ..readers.dumpdir import DumpDir
from ..readers.ffts_merge import op_dump_location, read_op_dump
from ..readers.formats import FORMAT_CODES
from ..readers.layout import LayoutError, to_host

# dumps (headers + float64 arrays) kept: a sub-graph needs a dozen at most, and sub-graphs share
# almost no file. 96 held ~12 MB more on the 5,000-op case for 1% fewer reads (issue 16).
_CACHE_FILES = 24
# and the float64 arrays kept, in bytes: real activations are tens of MB each as float64, and
# 24 files' worth of them held 1.7 GB at 3.7 GB of dumps (issue 16). An array larger than this
# is kept alone until the next one is read; the generated 5,000-op case holds 2.8 MB at most.
_CACHE_BYTES = 32 << 20


class MissingEvidence(Exception):
    """A dump tensor a verdict needs is absent or unreadable. ``path`` is None when no file
    exists at all (not dumped); otherwise the file that could not be used."""

    def __init__(self, reason: str, path: Path | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path

    @property
    def unreadable(self) -> bool:
        """A file exists but cannot be used (as opposed to: nothing was dumped)."""
        return self.path is not None


def host_array(dump: DumpFile, tensor: DumpTensor) -> np.ndarray:
    """One tensor of a dump as float64 in host layout (an array of its own); raises
    MissingEvidence."""
    wide = _decoded_wide(dump, tensor)
    if wide is not None:
        return wide
    values = host_values(dump, tensor)
    converted = np.asarray(values, dtype=np.float64)
    # a float64 dump comes back as a view of the file's bytes: kernels get a copy of their own
    return converted.copy() if converted is values else converted


# host layouts already, which to_host only reshapes (a device layout's transposes copy, and in
# float64 a copy costs four times a float16 one: those keep numpy's cast after the copy)
_PLAIN_FORMATS = frozenset(FORMAT_CODES[name] for name in ("NCHW", "ND", "NCDHW"))


def _decoded_wide(dump: DumpFile, tensor: DumpTensor) -> np.ndarray | None:
    """:func:`host_array`'s array decoded by the compiled kernel straight into float64: a big
    file is read a piece at a time, with no stored copy beside the float64 one and no numpy
    cast (on real activations those cost ~0.4 ms per float64 MB of a replay's evidence, issue
    16). For float32, float16 and (u)int8 tensors in a host layout; None for anything else or
    any problem, which :func:`host_values` then reads and reports as before."""
    if tensor.format not in _PLAIN_FORMATS or 0 in tensor.original_shape:
        return None
    stored = stored_tensor(dump, tensor)
    if stored is None:
        return None
    content, offset, char, _, count = stored
    wide = np.empty(count, np.float64)
    opened: list[int] = []
    try:
        if not decode_wide(stored_source(dump, content, opened), offset, char, wide):
            return None
    except (OSError, ValueError):
        return None
    finally:
        for fd in opened:
            os.close(fd)
    try:
        host = to_host(wide, tensor.format, tensor.shape, tuple(tensor.original_shape) or None)
    except (LayoutError, ValueError):
        return None
    wide.shape = host.shape  # a plain layout only reshapes: the array keeps its own data
    return wide


def host_values(dump: DumpFile, tensor: DumpTensor) -> np.ndarray:
    """One tensor of a dump in host layout and its dumped dtype, possibly a read-only view of
    the file's bytes (decoded without a copy); raises MissingEvidence."""
    if 0 in tensor.shape or 0 in tensor.original_shape:
        raise MissingEvidence(
            f"{dump.path}: {tensor.name} has a 0 in its shape {list(tensor.shape)}: no values",
            dump.path,
        )
    try:
        raw = dump.array(tensor, copy=False)
    except DumpError as error:
        raise MissingEvidence(str(error), dump.path) from None
    host_shape = tuple(tensor.original_shape) or None
    # a .npy file holds its array as the framework had it (msaccucmp tags it RESERVED)
    layout = FORMAT_CODES["ND"] if tensor.format == NPY_FORMAT else tensor.format
    try:
        values = to_host(raw, layout, raw.shape, host_shape)
    except (LayoutError, ValueError) as error:
        raise MissingEvidence(
            f"{dump.path}: {tensor.name}: cannot convert to host layout: {error}", dump.path
        ) from None
    if values.dtype.kind == "c":
        raise MissingEvidence(f"{dump.path}: {tensor.name}: complex values are not replayed")
    return values


class EvidenceStore:
    """Dump files of both sides by op name, decoded once each (small LRU of headers+arrays)."""

    def __init__(self, on_dir: DumpDir | None, off_dir: DumpDir | None) -> None:
        self.dirs = {"on": on_dir, "off": off_dir}
        self._files: OrderedDict[tuple[str, str], DumpFile | MissingEvidence] = OrderedDict()
        # arrays by file, so that evicting a file drops its arrays without a scan of them all
        self._arrays: dict[tuple[str, str], dict[tuple[str, int], np.ndarray]] = {}
        self._array_bytes = 0  # of the arrays in _arrays
        # every array handed out, while anything holds it: one dropped from the cache that a
        # caller still holds (a sub-graph's plan holds its inputs) is handed out again, not
        # decoded again beside itself (issue 16: a third of a real-sized replay's decoding)
        self._alive: weakref.WeakValueDictionary[tuple, np.ndarray] = weakref.WeakValueDictionary()
        self.files_read: set[str] = set()
        self.unreadable: dict[str, str] = {}  # path -> reason, for the run's verdict

    def has(self, side: str, op_name: str) -> bool:
        folder = self.dirs[side]
        return folder is not None and op_name in folder

    def dump(self, side: str, op_name: str) -> DumpFile:
        key = (side, op_name)
        cached = self._files.get(key)
        if cached is None:
            folder = self.dirs[side]
            # its text: no Path made per file (issue 16)
            path = op_dump_location(folder, op_name) if folder is not None else None
            if path is None:
                cached = MissingEvidence(f"no fusion-{side} dump of {op_name}")
            else:  # an FFTS+ op's files merged as the comparison merges them, or why not
                self.files_read.add(path)
                try:
                    cached = read_op_dump(folder, op_name)
                    if not cached.outputs and not cached.inputs:
                        cached = MissingEvidence(f"{path}: the dump holds no tensor", path)
                except DumpError as error:
                    cached = MissingEvidence(str(error), error.path)  # a merged file: its own
            self._files[key] = cached
            if len(self._files) > _CACHE_FILES:
                old_key, _ = self._files.popitem(last=False)
                self._drop_arrays(old_key)
        else:
            self._files.move_to_end(key)
        if isinstance(cached, MissingEvidence):
            if cached.unreadable:
                self.unreadable[str(cached.path)] = cached.reason
            raise cached
        return cached

    def tensor(self, side: str, op_name: str, kind: str, index: int) -> np.ndarray:
        """Input or output ``index`` of ``op_name``'s dump on ``side`` ("on"/"off"), float64."""
        arrays = self._arrays.get((side, op_name))
        found = arrays.get((kind, index)) if arrays is not None else None
        if found is not None:
            return found
        held = self._alive.get((side, op_name, kind, index))
        if held is not None:
            self._keep((side, op_name), (kind, index), held)
            return held
        dump = self.dump(side, op_name)
        tensors = dump.inputs if kind == "input" else dump.outputs
        if kind == "input" and self.dirs[side].ffts_mode(op_name) is not None:
            raise MissingEvidence(  # the rows compare them so; a replay would take a part
                f"{dump.path}: the inputs of FFTS+ op {op_name}'s merged dump are its first "
                "file's part only, not replayed from",
                None,
            )
        if index >= len(tensors):
            raise MissingEvidence(
                f"{dump.path}: fusion-{side} dump of {op_name} has {len(tensors)} {kind}(s), "
                f"{kind} {index} is needed",
                None,
            )
        try:
            values = host_array(dump, tensors[index])
        except MissingEvidence as missing:
            if missing.unreadable:
                self.unreadable[str(missing.path)] = missing.reason
            raise
        values.flags.writeable = False  # shared by every reader: nobody may change it
        self._alive[(side, op_name, kind, index)] = values
        self._keep((side, op_name), (kind, index), values)
        return values

    def _keep(self, key: tuple[str, str], slot: tuple[str, int], values: np.ndarray) -> None:
        """Cache ``values``; then drop the arrays of the least recently read other files, and
        at last this file's other arrays, until the cached arrays fit in :data:`_CACHE_BYTES`
        (the headers stay). An array larger than that is kept alone, until the next one is
        read: the localisation scores every variant against the same fused output."""
        size = values.nbytes
        if size <= _CACHE_BYTES:
            self._arrays.setdefault(key, {})[slot] = values
            self._array_bytes += size
            if self._array_bytes <= _CACHE_BYTES:
                return
            for old_key in list(self._files):  # least recently read first
                if old_key != key:
                    self._drop_arrays(old_key)
                    if self._array_bytes <= _CACHE_BYTES:
                        return
        # over the budget alone, or with this file's other arrays: kept alone
        self._arrays.clear()
        self._arrays[key] = {slot: values}
        self._array_bytes = size

    def release_arrays(self) -> None:
        """Let every cached array go (the headers stay): before a localisation, whose
        variants need room for several of a sub-graph's activations at once."""
        self._arrays.clear()
        self._array_bytes = 0

    def _drop_arrays(self, key: tuple[str, str]) -> None:
        dropped = self._arrays.pop(key, None)
        if dropped:
            self._array_bytes -= sum(array.nbytes for array in dropped.values())

    def output_origin(self, side: str, op_name: str, index: int) -> str | None:
        """The original op the dump names for output ``index`` (``OpOutput.original_op``),
        None when the dump or the name is missing."""
        try:
            outputs = self.dump(side, op_name).outputs
        except MissingEvidence:
            return None
        said = outputs[index].original_op if index < len(outputs) else None
        if said is None or not said.name:
            return None
        return said.name

    def dtype_code(self, side: str, op_name: str, kind: str, index: int) -> int | None:
        try:
            dump = self.dump(side, op_name)
        except MissingEvidence:
            return None
        tensors = dump.inputs if kind == "input" else dump.outputs
        return tensors[index].data_type if index < len(tensors) else None
