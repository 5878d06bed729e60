"""Write and read ``result_<YYYYmmddHHMMSS>.csv`` in msaccucmp's layout.

Columns (formats.md 4.3): ``Index, OpType, NPUDump, DataType, Address, GroundTruth, DataType,
Address, TensorIndex, Shape``, the selected metrics in selection order, ``CompareFailReason``.
An ``Address`` column is left out for a side whose dump folder holds ``.npy`` files. Rows are
written with :mod:`csv` in the Excel dialect (CRLF line ends), as msaccucmp does.

The file is written as an unnamed file in the output folder (Linux's ``O_TMPFILE``), named
only when complete: a run killed even by SIGKILL leaves nothing, as the kernel frees a file
that has no name. Where the folder's file system or the kernel cannot make one (NFS, other
systems), it is written to a hidden temporary name, created exclusively and never through a
symbolic link (``O_EXCL | O_NOFOLLOW``). Both are renamed to the result's name when complete,
so an interrupted run never leaves a half-written result behind; the temporary files of a run
that was killed (its process is gone) are removed by the next run into the same folder.

Cells that a spreadsheet would run as a formula (op names come from user graphs) are
neutralised with msaccucmp's own pattern (``cmp_utils.utils.MALICIOUS_CSV_PATTERN``: a leading
``= + - % @`` or their full-width forms, or one after a ``;``, in a cell that is not a number);
msaccucmp leaves out the whole row holding such a cell (the op's rows vanish from its CSV
without a word); we keep the row and write the cell with a space in front (msaccucmp's own
"replace" mode).
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import itertools
import os
import re
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..readers.unnamed_file import link_unnamed, open_unnamed
from .metrics import NAN_TEXT
from .result import NAN, ResultRow

try:  # the same lines, ~10x faster (see _csv_rows.c); optional, as every C extension here
    from . import _csv_rows
except ImportError:  # pragma: no cover - an install without a C compiler
    _csv_rows = None

_FORMULA_LEAD_TEXT = "＝＋－+-=%@"
_FORMULA_LEADS = frozenset(_FORMULA_LEAD_TEXT)
_FORMULA = re.compile(r"^[＝＋－+\-=%@]|;[＝＋－+\-=%@]")
# Our temporary files: the CSV's (below) and diagnose.summary.write_text_atomic's.
_TEMPORARY = re.compile(
    r"^\.(?:result_\d+\.csv\.(\d+)\.part|(?:summary\.json|report\.html)\.(\d+)\.[0-9a-f]+\.tmp)$"
)


def neutralised(cell: str) -> str:
    """``cell``, with a space in front when a spreadsheet would read it as a formula."""
    if not cell or (cell[0] not in _FORMULA_LEADS and ";" not in cell):
        return cell  # the common case, without a regular expression (200,000 cells at 5,000 ops)
    if not _FORMULA.search(cell):
        return cell
    try:
        float(cell)
    except ValueError:
        return " " + cell
    return cell


def remove_stale_temporaries(out_dir: str | os.PathLike) -> list[Path]:
    """Delete the temporary files that runs killed before their rename left in ``out_dir``
    (those whose process no longer exists and whose lock nobody holds); returns what was
    removed."""
    removed = []
    with contextlib.suppress(OSError), os.scandir(out_dir) as entries:
        for entry in entries:
            match = _TEMPORARY.match(entry.name)
            if match is None:
                continue
            pid = int(match.group(1) or match.group(2))
            if pid == os.getpid() or _alive(pid):
                continue
            with contextlib.suppress(OSError), _unless_locked(entry.path) as free:
                if free:
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


def hold_lock(handle) -> None:
    """Lock a temporary file this run writes, for as long as it is open: a run whose pid this
    one cannot see (another pid namespace: a container binding the folder; another host on
    shared storage) looked ended, and its files were removed under it (a review). Where the
    file system has no locks, the pid alone decides, as before."""
    with contextlib.suppress(OSError):
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


@contextlib.contextmanager
def _unless_locked(path: str):
    """Whether the file at ``path`` is free to remove: True unless a lock on it is held (the
    lock taken meanwhile, released after the removal). A file that cannot be opened (a link,
    no permission) is no live run's: True."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        except OSError:  # no locks here: the pid decided
            pass
        yield True
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _open_exclusive(path: Path, mode: str = "w"):
    """A new file at ``path`` for writing; fails if anything is there, link or not."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    if "b" in mode:
        return open(fd, mode)
    return open(fd, mode, newline="", encoding="utf-8")


def _open_unnamed(folder: Path):
    """A file in ``folder`` with no name yet, for writing text, or None (take the named
    path)."""
    fd = open_unnamed(folder, os.O_RDWR, 0o644)
    return None if fd is None else open(fd, "w+", newline="", encoding="utf-8")


def _give_name(handle, path: Path) -> None:
    """Give the unnamed file behind ``handle`` the name ``path``, which must not exist (a link
    planted there is not followed). Linked through ``/proc``; where that cannot be done (no
    ``/proc``, a sandbox), its text is copied into a new file of that name instead."""
    handle.flush()
    fd = handle.fileno()
    folder = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if link_unnamed(fd, folder, path.name):
            return
    finally:
        os.close(folder)
    os.lseek(fd, 0, os.SEEK_SET)
    with open(fd, "rb", closefd=False) as unnamed, _open_exclusive(path, "wb") as named:
        try:
            shutil.copyfileobj(unnamed, named)
        except BaseException:  # a full disk, an interrupt: not half a copy under our name
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise


def _link_unused(source: Path, path: Path) -> Path:
    """Link ``source`` as ``path``, or as ``<stem>_1<suffix>``, ``_2``... where that is taken
    (a link never replaces a file); the name it got. Where the file system makes no hard
    links, the first name free is taken by a rename (a race with another run is then
    possible)."""
    for number in itertools.count():
        name = path if number == 0 else path.with_name(f"{path.stem}_{number}{path.suffix}")
        try:
            os.link(source, name, follow_symlinks=False)
            return name
        except FileExistsError:
            continue
        except OSError:  # no hard links here (some network and FUSE file systems)
            if os.path.lexists(name):
                continue
            os.replace(source, name)
            return name
    raise AssertionError("unreachable")


def result_file_name(now: float | None = None) -> str:
    """``result_YYYYmmddHHMMSS.csv`` in local time, like msaccucmp."""
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(time.time() if now is None else now))
    return f"result_{stamp}.csv"


@dataclass(frozen=True)
class CsvLayout:
    """The columns a result file has: the metrics in selection order and whether each side has
    an ``Address`` column. Rows rendered under one layout are written only into a file of the
    same layout (:meth:`ResultCsvWriter.write`)."""

    algorithms: tuple[str, ...]
    left_address: bool = True
    right_address: bool = True


@dataclass(frozen=True)
class RenderedRows:
    """Rows already turned into the file's text (:func:`render_rows`), with their layout."""

    layout: CsvLayout
    text: str


def render_rows(rows: Iterable[ResultRow], layout: CsvLayout) -> RenderedRows:
    """``rows`` as the lines :class:`ResultCsvWriter` would write for them under ``layout``.

    A pool worker renders its own chunks (issue 16): the comparing process, which also
    measures, then only copies their text into the file. The compiled renderer writes the
    lines when it is built and the rows hold what a ResultRow holds; else the csv module."""
    rows = rows if isinstance(rows, list) else list(rows)
    left, right = layout.left_address, layout.right_address
    if _csv_rows is not None:
        try:
            text = _csv_rows.render(
                rows, layout.algorithms, left, right, _FORMULA_LEAD_TEXT, neutralised
            )
            return RenderedRows(layout, text)
        except TypeError:  # a value of another type: the csv module writes it as it does
            pass
    return RenderedRows(layout, written_rows(rows, layout))


def written_rows(rows: Iterable[ResultRow], layout: CsvLayout) -> str:
    """``rows`` as csv.writer writes their :func:`cells` (the reference rendering)."""
    buffer = io.StringIO(newline="")
    algorithms = layout.algorithms
    left, right = layout.left_address, layout.right_address
    csv.writer(buffer).writerows(
        cells(row, algorithms, left_address=left, right_address=right) for row in rows
    )
    return buffer.getvalue()


def header(
    algorithms: Sequence[str], *, left_address: bool = True, right_address: bool = True
) -> list[str]:
    columns = ["Index", "OpType", "NPUDump", "DataType"]
    if left_address:
        columns.append("Address")
    columns += ["GroundTruth", "DataType"]
    if right_address:
        columns.append("Address")
    columns += ["TensorIndex", "Shape", *algorithms, "CompareFailReason"]
    return columns


def cells(
    row: ResultRow,
    algorithms: Sequence[str],
    *,
    left_address: bool = True,
    right_address: bool = True,
) -> list[str]:
    """The row's CSV cells under :func:`header`."""
    out = [str(row.index), row.op_type, row.npu_dump, row.left_dtype]
    if left_address:
        out.append(row.left_address)
    out += [row.ground_truth, row.right_dtype]
    if right_address:
        out.append(row.right_address)
    tensor, shape = row.tensor_index, row.shape
    out.append(tensor if tensor is not None else NAN_TEXT)
    # row.shape_text and row.fail_reason_text, inline (once per row, 10,000 rows at 5,000 ops)
    out.append(NAN if shape is None else "[" + ",".join(map(str, shape)) + "]")
    get = row.metric_text.get
    out += [get(name, NAN_TEXT) for name in algorithms]
    out.append(",".join(row.fail_reason))
    # neutralised()'s own first test inline: most cells pass it (23 cells a row, 10,000 rows)
    leads = _FORMULA_LEADS
    return [
        cell if not cell or (cell[0] not in leads and ";" not in cell) else neutralised(cell)
        for cell in out
    ]


class ResultCsvWriter:
    """Streams rows into a temporary file; :meth:`commit` renames it to its final name."""

    def __init__(
        self,
        out_dir: str | os.PathLike,
        algorithms: Sequence[str],
        *,
        left_address: bool = True,
        right_address: bool = True,
        file_name: str | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.algorithms = list(algorithms)
        self.left_address = left_address
        self.right_address = right_address
        self.path = self.out_dir / (file_name or result_file_name())
        # a name of its own, never another run's of the same second (see :meth:`commit`)
        self._own_name = file_name is None
        self.temp_path = self.out_dir / f".{self.path.name}.{os.getpid()}.part"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(self.out_dir)
        unnamed = _open_unnamed(self.out_dir)
        self.unnamed = unnamed is not None
        self._handle = unnamed if unnamed is not None else _open_exclusive(self.temp_path)
        hold_lock(self._handle)  # an unnamed file's too: it is named before its last rename
        self._named = not self.unnamed  # temp_path is ours to remove
        self._writer = csv.writer(self._handle)
        self._writer.writerow(
            header(self.algorithms, left_address=left_address, right_address=right_address)
        )

    @property
    def layout(self) -> CsvLayout:
        return CsvLayout(tuple(self.algorithms), self.left_address, self.right_address)

    def write(self, rows: Iterable[ResultRow], rendered: RenderedRows | None = None) -> None:
        """Append ``rows``; ``rendered``: the same rows already rendered (:func:`render_rows`),
        copied as they are when their layout is this file's (else ``rows`` are rendered)."""
        layout = self.layout
        if rendered is None or rendered.layout != layout:
            rendered = render_rows(rows, layout)
        self._handle.write(rendered.text)

    def commit(self) -> Path:
        """Finish the file and move it to :attr:`path`. An unnamed file gets the temporary name
        first; only a kill in the instant between the two steps can leave that name behind.
        A name given is replaced if it exists (never written through); the timestamped name
        is the file's own: a run of the same second into the same folder has it, this one
        takes ``result_<time>_1.csv`` (a review: two runs shared one CSV, and one summary
        named the other's rows)."""
        try:
            if not self._named:
                _give_name(self._handle, self.temp_path)
                self._named = True
            self._handle.flush()
            # renamed while still open: its lock (hold_lock) covers the temporary name to the end
            if self._own_name:
                self.path = _link_unused(self.temp_path, self.path)
                with contextlib.suppress(FileNotFoundError):  # renamed: no link could be made
                    os.unlink(self.temp_path)
            else:
                os.replace(self.temp_path, self.path)
        finally:
            self._handle.close()
        return self.path

    def abort(self) -> None:
        """Close and delete the temporary file (nothing is left behind)."""
        if not self._handle.closed:
            self._handle.close()  # an unnamed file is gone with it
        if self._named:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.temp_path)

    def __enter__(self) -> ResultCsvWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()


def write_result_csv(
    out_dir: str | os.PathLike, rows: Iterable[ResultRow], algorithms: Sequence[str], **options
) -> Path:
    """Write all rows at once (see :class:`ResultCsvWriter`); returns the final path."""
    with ResultCsvWriter(out_dir, algorithms, **options) as writer:
        writer.write(rows)
        return writer.commit()


def read_result_csv(path: str | os.PathLike) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a result CSV (ours or msaccucmp's)."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader: Iterator[list[str]] = csv.reader(handle)
        head = next(reader, [])
        return head, [row for row in reader]
