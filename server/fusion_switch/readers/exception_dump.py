"""Exception dumps: what CANN writes when a kernel fails on the device (not an op's tensors).

Two namings are known: ``exception_info.{stream_id}.{task_id}.{time}`` (the args exception
dumper, seen in a real NPU run: ``samples/real/dumps/``) and
``{kernel}.{stream_id}.{task_id}.{core_type}.{core_id}.{time}``. The file has the usual binary
dump layout, but its header holds only ``version``, ``dump_time`` and ``input`` entries that carry
a ``size`` and nothing else: they are the failing kernel's argument buffers and tiling data, with
no data type, format, shape or op name. So "exception_info" is no op type, the stream id no op
name, and DT_UNDEFINED / NCHW read from such a header mean "not recorded". The header's
``dump_time`` differs from the time in the file name by tens of microseconds: files and headers
are never matched by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .dump import DumpError, read_dump
from .exception_name import ExceptionName, is_exception_dump_name, parse_exception_name

__all__ = [
    "NOT_RECORDED",
    "ExceptionBuffer",
    "ExceptionDump",
    "ExceptionName",
    "is_exception_dump_name",
    "parse_exception_name",
    "read_exception_dump",
]

NOT_RECORDED = "no dtype or shape recorded"


@dataclass(frozen=True)
class ExceptionBuffer:
    index: int
    size: int
    dtype: str  # the recorded data type name, or NOT_RECORDED
    shape: tuple[int, ...] | None  # None: not recorded


@dataclass(frozen=True)
class ExceptionDump:
    path: Path
    name: ExceptionName
    version: str
    dump_time: int
    op_name: str  # "" when the header names none (the usual case)
    buffers: list[ExceptionBuffer]

    @property
    def n_bytes(self) -> int:
        return sum(b.size for b in self.buffers)

    def describe(self) -> str:
        n = self.name
        who = f"kernel {n.kernel}" if n.kernel else "exception_info"
        core = f", core {n.core_type} {n.core_id}" if n.core_type else ""
        op = f", op {self.op_name}" if self.op_name else ", no op name recorded"
        sizes = ", ".join(str(b.size) for b in self.buffers)
        recorded = {b.dtype for b in self.buffers}
        what = NOT_RECORDED if recorded <= {NOT_RECORDED} else "dtypes " + ", ".join(recorded)
        return (
            f"{who}: stream {n.stream_id}, task {n.task_id}{core}{op}; "
            f"{len(self.buffers)} buffers ({sizes} bytes), {what}"
        )


def read_exception_dump(path: str | Path) -> ExceptionDump:
    """Read an exception dump; raises DumpError naming the file when it cannot be read."""
    p = Path(path)
    name = parse_exception_name(p.name)
    if name is None:
        raise DumpError(p, "not named like an exception dump (exception_info.S.T.TIME)")
    dump = read_dump(p)
    buffers = []
    for t in [*dump.inputs, *dump.outputs]:
        typed = "data_type" in t.recorded
        buffers.append(
            ExceptionBuffer(
                index=len(buffers),
                size=t.size,
                dtype=t.data_type_name if typed else NOT_RECORDED,
                shape=t.shape if "shape" in t.recorded else None,
            )
        )
    return ExceptionDump(p, name, dump.version, dump.dump_time, dump.op_name, buffers)
