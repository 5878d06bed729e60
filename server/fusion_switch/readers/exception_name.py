"""Exception dump file names: ``exception_info.{stream_id}.{task_id}.{time}`` and
``{kernel}.{stream_id}.{task_id}.{core_type}.{core_id}.{time}`` (see :mod:`.exception_dump`).

Apart from the reader so that the dump-folder scans tell these files from op dumps without
importing numpy (issue 16: `compare` imports it while it waits for its fusion-off helper).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EXCEPTION_INFO = re.compile(r"^exception_info\.(\d+)\.(\d+)\.(\d+)$")
KERNEL_EXCEPTION = re.compile(
    r"^([A-Za-z0-9_-]+)\.(\d+)\.(\d+)\.([A-Za-z][A-Za-z0-9_]*|\d+)\.(\d+)\.(\d{10,19})$"
)


@dataclass(frozen=True)
class ExceptionName:
    """The fields of an exception dump's file name (``kernel`` is "" for exception_info)."""

    kernel: str
    stream_id: int
    task_id: int
    time: int
    core_type: str = ""
    core_id: int | None = None


def parse_exception_name(name: str) -> ExceptionName | None:
    """The fields of an exception dump file name, or None when the name is not one."""
    m = EXCEPTION_INFO.match(name)
    if m:
        return ExceptionName("", int(m.group(1)), int(m.group(2)), int(m.group(3)))
    m = KERNEL_EXCEPTION.match(name)
    if m and not (len(m.group(5)) == 16 and m.group(5).isdigit()):
        # a 16-digit 5th field would make it an op dump {type}.{name}.{task}.{stream}.{time}...
        return ExceptionName(
            kernel=m.group(1),
            stream_id=int(m.group(2)),
            task_id=int(m.group(3)),
            time=int(m.group(6)),
            core_type=m.group(4),
            core_id=int(m.group(5)),
        )
    return None


def is_exception_dump_name(name: str) -> bool:
    return parse_exception_name(name) is not None
