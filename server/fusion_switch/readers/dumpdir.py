"""Dump directories: find the folder holding the files, index files by op name, pick the newest.

CANN writes ``{dump_path}/{YYYYMMDDHHMMSS}/{device_id}/{model_name}/{model_id}/{data_index}/``
and, inside, one file per executed task named ``{op_type}.{op_name}.{task_id}[.{stream_id}].
{timestamp}`` (FFTS+ adds ``.{task_type}.{context_id}.{thread_id}[.{device_id}]``), or
``{op_name}.{output_index}.{timestamp}.npy`` for numpy dumps. Names too long for the file
system are replaced by numbers and listed in ``mapping.csv``. Names are recognised with
msaccucmp's own pattern so both tools see the same files (formats.md 1.7).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import operator
import os
import re
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .exception_name import is_exception_dump_name
from .ffts_slices import NORMAL, ffts_stamp, op_key, order_key, task_mode, without_lxslice

try:
    from . import _files  # file sizes stat'ed without the GIL (_files.c); optional
except ImportError:  # pragma: no cover - exercised on machines without a C compiler
    _files = None

MAPPING_FILE = "mapping.csv"
# why a numeric-named file is in no op's list: the reasons start so, and the scan picks them out
_UNLISTED = f"numeric name not listed in {MAPPING_FILE}"
OFFLINE_PATTERN = re.compile(
    r"^[A-Za-z0-9_-]+\.([A-Za-z0-9_-]+)\.[0-9]+(\.[0-9]+)?\.[0-9]{1,255}"
    r"(\.[0-9]+\.[0-9]+\.[0-9]+)?(\.[0-9]+)?"
)
NPY_PATTERN = re.compile(r"^([.A-Za-z0-9_-]+)\.([0-9]+)\.([0-9]{1,255})\.npy$")
# The usual name, op_type.op_name.task_id.stream_id.timestamp, as parse_dump_name reads it
# (the index's fast path: one match and three ints where the general parse took ~3 us a file)
_USUAL_NAME = re.compile(r"([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([0-9]+)\.([0-9]+)\.([0-9]{1,255})")
_ENTRY_NAME = operator.attrgetter("name")
_TIMESTAMP_DIR = re.compile(r"^[0-9]{14}$")
_SANITIZE = str.maketrans({"/": "_", ".": "_", "\\": "_", " ": "_"})
_MAX_DEPTH = 8
TASK_TYPES = {0: "AICORE", 1: "AICPU", 2: "DEBUG", 3: "HCCL", 4: "FFTSPLUS"}
_IGNORED_FILES = {MAPPING_FILE, "convert_failed_file_list.txt"}


class DumpDirError(Exception):
    """A dump folder that cannot be used; ``str()`` names the folder and the problem."""

    def __init__(self, path: str | os.PathLike, message: str) -> None:
        self.path = str(path)
        self.message = message
        super().__init__(f"{self.path}: {message}")


def _maybe_exception_dump_name(name: str) -> bool:
    """A necessary condition of ``is_exception_dump_name`` (its names: ``exception_info.S.T.TIME``,
    or six fields without dots ``kernel.S.T.core.id.time``), cheap enough for every file of a
    folder: the regular expressions run only when it holds (issue 16; test_dumpdir.py checks
    it against them)."""
    return name.count(".") == 5 or name.startswith("exception_info")


def sanitize_op_name(name: str) -> str:
    """The op name as it appears in dump file names: ``/ . \\`` and space become ``_``.

    (msaccucmp's lookup replaces only ``/`` and ``.``; CANN's writer replaces all four.)
    """
    if "/" not in name and "." not in name and "\\" not in name and " " not in name:
        return name  # most names: four scans cost a fifteenth of the translation (issue 16)
    return name.translate(_SANITIZE)


def dump_file_name(
    op_type: str, op_name: str, task_id: int, stream_id: int | None, timestamp: int
) -> str:
    """A dump file name as CANN writes it (timestamps are 16-digit microseconds)."""
    fields = [sanitize_op_name(op_type), sanitize_op_name(op_name), str(task_id)]
    if stream_id is not None:
        fields.append(str(stream_id))
    fields.append(f"{timestamp:016d}")
    return ".".join(fields)


class DumpName:
    """The fields of one dump file name. ``real_name`` differs from the file's name when it
    came from ``mapping.csv``. ``path`` may be given as a string: the :class:`~pathlib.Path`
    is then made on first use (a folder of 10,000 dumps is indexed for the few paths read)."""

    __slots__ = (
        "_location",
        "_path",
        "context_id",
        "device_id",
        "is_npy",
        "op_name",
        "op_type",
        "output_index",
        "real_name",
        "stream_id",
        "task_id",
        "task_type",
        "thread_id",
        "timestamp",
    )
    _FIELDS = (
        "path",
        "real_name",
        "op_name",
        "timestamp",
        "op_type",
        "task_id",
        "stream_id",
        "task_type",
        "context_id",
        "thread_id",
        "device_id",
        "output_index",
        "is_npy",
    )

    def __init__(
        self,
        path: Path | str,
        real_name: str,
        op_name: str,
        timestamp: int,
        op_type: str = "",
        task_id: int | None = None,
        stream_id: int | None = None,
        task_type: int | None = None,
        context_id: int | None = None,
        thread_id: int | None = None,
        device_id: int | None = None,
        output_index: int | None = None,  # .npy dumps only
        is_npy: bool = False,
    ) -> None:
        self._path = path if isinstance(path, Path) else None
        self._location = path
        self.real_name = real_name
        self.op_name = op_name
        self.timestamp = timestamp
        self.op_type = op_type
        self.task_id = task_id
        self.stream_id = stream_id
        self.task_type = task_type
        self.context_id = context_id
        self.thread_id = thread_id
        self.device_id = device_id
        self.output_index = output_index
        self.is_npy = is_npy

    @property
    def path(self) -> Path:
        path = self._path
        if path is None:
            path = self._path = _joined(self._location)
        return path

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not DumpName:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"DumpName({shown})"

    def __getstate__(self) -> tuple:
        return self._values()

    def __setstate__(self, state: tuple) -> None:
        self.__init__(*state)

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (self.timestamp, self.thread_id or 0, self.real_name)


def _is_timestamp(text: str) -> bool:
    return len(text) == 16 and text.isdigit()


def parse_dump_name(real_name: str, path: Path | str | None = None) -> DumpName | str:
    """Parse a dump file name; returns the reason as a string when it is not one. ``path``
    (default: the name itself) may be a string, made a Path on first use."""
    path = path or real_name
    # "exception_info" is no op type, 1026 no op name
    if _maybe_exception_dump_name(real_name) and is_exception_dump_name(real_name):
        return "exception dump (a failing kernel's buffers, no op name): see fusion-switch dumps"
    if real_name.endswith(".npy"):
        match = NPY_PATTERN.match(real_name)
        if not match:
            return "not named {op_name}.{output_index}.{timestamp}.npy"
        return DumpName(
            path=path,
            real_name=real_name,
            op_name=op_key(match.group(1)),
            output_index=int(match.group(2)),
            timestamp=int(match.group(3)),
            is_npy=True,
        )
    match = OFFLINE_PATTERN.match(real_name)
    if not match:
        return "not named {op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}"
    fields = real_name.split(".")
    numbers = fields[2:]
    if len(numbers) == 3 and all(map(str.isdigit, numbers)):  # task.stream.timestamp
        return DumpName(
            path,
            real_name,
            op_key(match.group(1)),
            int(numbers[2]),
            fields[0],
            int(numbers[0]),
            int(numbers[1]),
        )
    if not all(n.isdigit() for n in numbers):
        return "trailing fields after the timestamp are not numbers"
    values = [int(n) for n in numbers]
    info: dict[str, int | None] = {}
    if len(values) <= 3:  # task[.stream].timestamp
        info["task_id"] = values[0]
        info["stream_id"] = values[1] if len(values) == 3 else None
        info["timestamp"] = values[-1]
    elif len(values) == 4:  # task.stream.timestamp.device: too few fields for FFTS+
        info.update(task_id=values[0], stream_id=values[1], timestamp=values[2])
        info["device_id"] = values[3]
    else:  # FFTS+: [stream.]task.timestamp.task_type.context.thread[.device]
        if len(values) == 5:
            stream, head, device = None, values[:2], None
        elif len(values) == 6 and _is_timestamp(numbers[1]) and not _is_timestamp(numbers[2]):
            stream, head, device = None, values[:2], values[5]
        elif len(values) == 6:
            stream, head, device = values[0], values[1:3], None
        else:
            stream, head, device = values[0], values[1:3], values[6] if len(values) > 6 else None
        offset = 2 if stream is None else 3
        info.update(
            task_id=head[0],
            stream_id=stream,
            timestamp=head[1],
            task_type=values[offset],
            context_id=values[offset + 1],
            thread_id=values[offset + 2],
            device_id=device,
        )
    return DumpName(
        path=path,
        real_name=real_name,
        op_name=op_key(match.group(1)),
        op_type=fields[0],
        **info,  # type: ignore[arg-type]
    )


def read_mapping(folder: Path) -> tuple[dict[str, str], list[str]]:
    """``mapping.csv`` (``numeric_name,real_name`` rows, no header) → ({numeric: real}, what
    is wrong with it). A damaged file was dropped without a word (a review): the dumps it no
    longer listed vanished, the guilty op's among them."""
    mapping_path = folder / MAPPING_FILE
    if not os.path.lexists(mapping_path):
        return {}, []
    result: dict[str, str] = {}
    problems: list[str] = []
    try:
        with open(mapping_path, "rb") as handle:
            text = handle.read().decode("utf-8-sig")
        for number, row in enumerate(csv.reader(text.splitlines()), start=1):
            if len(row) == 2 and row[0].strip() and row[1].strip():
                result[row[0].strip()] = row[1].strip()
            elif row:
                problems.append(
                    f"{mapping_path}: line {number}: expected numeric_name,real_name, found "
                    f"{','.join(row)[:80]!r}"
                )
    except UnicodeDecodeError as error:
        problems.append(f"{mapping_path}: not UTF-8 text (byte {error.start})")
    except (OSError, csv.Error) as error:
        problems.append(f"{mapping_path}: cannot be read ({getattr(error, 'strerror', error)})")
    if not result and not problems:
        problems.append(f"{mapping_path}: lists no file")
    return result, problems


@dataclass
class DumpDir:
    """The dump files of one folder, by op name (as written in file names)."""

    path: Path
    requested: Path
    notes: list[str] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)
    # named as a dump file but no regular file: a folder, a broken link, a FIFO (with why)
    unusable: list[tuple[DumpName, str]] = field(default_factory=list)
    # numeric-named dumps a damaged or unreadable mapping.csv does not name ("PATH: why")
    unmatched: list[str] = field(default_factory=list)
    _files: dict[str, list[DumpName]] = field(default_factory=dict, repr=False)
    # op name -> FFTS+ mode of the ops of several files msaccucmp merges, or why it cannot
    _modes: dict[str, int | str] = field(default_factory=dict, repr=False)
    # graph op name -> its file-name form, for names that differ (sanitised once per name)
    _aliases: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    _sizes: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    # prefetch_latest_sizes(): its thread, the op names it stats, its answer (not pickled)
    _prefetch: tuple[threading.Thread, list[str], dict] | None = field(
        default=None, repr=False, compare=False
    )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_prefetch"] = None
        return state

    def prefetch_latest_sizes(self) -> bool:
        """Start stat'ing every op's newest file in a thread that does not hold the GIL, for
        :meth:`latest_bytes` to find done: the comparing process imports numpy meanwhile, on
        one core, while the other is idle (issue 16: the chunk plan's 5,000 stats took ~16 ms
        after it). False (nothing started) without the compiled helper."""
        if _files is None or self._prefetch is not None:
            return False
        keys = [key for key, names in self._files.items() if names]
        locations = [self._files[key][-1]._location for key in keys]
        box: dict = {}

        def run() -> None:
            # on an error (a NUL in a name...) latest_bytes stats as it would without this
            with contextlib.suppress(Exception):
                box["sizes"] = _files.sizes(locations)

        thread = threading.Thread(target=run, name="fusion-switch-sizes", daemon=True)
        thread.start()
        self._prefetch = (thread, keys, box)
        return True

    def _take_prefetched(self) -> None:
        thread, keys, box = self._prefetch
        self._prefetch = None
        thread.join()
        for key, size in zip(keys, box.get("sizes", ()), strict=False):  # none: it failed
            if key not in self._modes:  # an FFTS+ op's merge holds all its files: below
                self._sizes.setdefault(key, max(size, 0))  # -1: gone since the listing

    @property
    def op_names(self) -> list[str]:
        return sorted(self._files)

    @property
    def is_npy(self) -> bool:
        return any(name.is_npy for names in self._files.values() for name in names)

    def entries(self, op_name: str, output_index: int | None = None) -> list[DumpName]:
        """Parsed names of an op's files, oldest first. ``op_name`` may be the graph name."""
        return list(self._names(op_name, output_index))

    def _names(self, op_name: str, output_index: int | None) -> list[DumpName]:
        """The index's own list (not a copy) unless ``output_index`` filters it."""
        names = self._files.get(op_name)
        if names is None:
            alias = self._aliases.get(op_name)
            if alias is None:
                alias = self._aliases[op_name] = sanitize_op_name(without_lxslice(op_name))
            names = self._files.get(alias, [])
        if output_index is not None:
            names = [n for n in names if n.output_index in (None, output_index)]
        return names

    def unusable_for(self, op_names: Iterable[str]) -> list[str]:
        """What stands where the dump of one of ``op_names`` (a graph's) should be and is no
        file ("PATH: why"), unless a readable dump of the op is newer: a dump the verdict
        needs that cannot be read (a review: left out of the index unsaid, the op's verdict
        went from "introduces" to an unverified exit 0). Numeric-named dumps a damaged
        mapping.csv does not list are any op's: always said."""
        found = list(self.unmatched)
        if not self.unusable:
            return found
        named = {sanitize_op_name(name) for name in op_names}
        for entry, why in self.unusable:
            if entry.op_name not in named:
                continue
            readable = self._files.get(entry.op_name)
            if readable and readable[-1].sort_key > entry.sort_key:
                continue
            found.append(f"{entry.path}: {why}, not a dump file")
        return found

    def latest_bytes(self, op_name: str) -> int:
        """The size of :meth:`latest`, of all an FFTS+ op's files when they are merged (0: no
        file, or gone since the folder was listed, which its reading reports), stat'ed where
        the folder's listing gave it, without making a Path of every op's file (issue 16);
        once per op: the plan and the memory budget's estimates ask again."""
        if self._prefetch is not None:
            self._take_prefetched()
        known = self._sizes.get(op_name)
        if known is not None:
            return known
        names = self._names(op_name, None)
        size = 0
        for name in names if self.ffts_mode(op_name) is not None else names[-1:]:
            with contextlib.suppress(OSError):
                size += os.stat(name._location).st_size
        self._sizes[op_name] = size
        return size

    def files_for(self, op_name: str, output_index: int | None = None) -> list[Path]:
        """Paths of an op's dump files, oldest → newest."""
        return [name.path for name in self.entries(op_name, output_index)]

    def latest(self, op_name: str, output_index: int | None = None) -> Path | None:
        """The file msaccucmp would use for the op: the one with the newest timestamp."""
        names = self._names(op_name, output_index)
        return names[-1].path if names else None

    def latest_location(self, op_name: str, output_index: int | None = None) -> str | None:
        """:meth:`latest` as text, without making a Path (the measure stage reads 10,000 files
        at 5,000 ops by their text: issue 16)."""
        names = self._names(op_name, output_index)
        if not names:
            return None
        location = names[-1]._location
        return location if type(location) is str else os.fspath(location)

    def ffts_mode(self, op_name: str) -> int | str | None:
        """AUTO or MANUAL (:mod:`.ffts_slices`) for an op of several FFTS+ files msaccucmp
        merges (:meth:`entries` in its order), a text saying why it cannot, else None."""
        if not self._modes:
            return None
        names = self._names(op_name, None)
        return self._modes.get(names[0].op_name) if names else None

    def sort_stamp(self, op_name: str) -> int | None:
        """The stamp msaccucmp orders an L1 group's ops by (None: no file): of the op's last
        file in its order, the one :func:`_msaccucmp_stamp` reads, an FFTS+ op's fifth field."""
        names = self._names(op_name, None)
        if not names:
            return None
        last = names[-1]
        listed = os.path.basename(last._location)
        mode = self.ffts_mode(op_name) if len(names) > 1 else task_mode(last.real_name)
        if isinstance(mode, int) and mode != NORMAL:
            return ffts_stamp(listed, last.real_name)
        return _msaccucmp_stamp(listed)

    def __contains__(self, op_name: object) -> bool:
        return isinstance(op_name, str) and bool(self._names(op_name, None))

    def __len__(self) -> int:
        return len(self._files)


_FOLDERS: dict[str, Path] = {}  # folder text -> Path, for _joined
_FOLDERS_KEPT = 4096


def _joined(location: str | Path) -> Path:
    """``Path(location)``, made as its folder's Path (parsed once per folder) joined with the
    file name: parsing every component of a long dump path again for each of 10,000 files
    was a few percent of the measure stage."""
    head, tail = os.path.split(location)
    folder = _FOLDERS.get(head)
    if folder is None:
        if len(_FOLDERS) >= _FOLDERS_KEPT:
            _FOLDERS.clear()
        folder = _FOLDERS[head] = Path(head)
    return folder / tail


def _index_folder(
    folder: Path, mapping_problems: list[str] | None = None
) -> tuple[dict[str, list[DumpName]], list[tuple[str, str]], list[tuple[DumpName, str]], dict]:
    """The folder's dump files by op name, the files ignored (name, why), the entries
    named as dump files that are no regular file (their parsed name, what they are), and the
    FFTS+ mode of the ops msaccucmp merges (:meth:`DumpDir.ffts_mode`);
    ``mapping_problems`` gets what is wrong with its mapping.csv."""
    mapping, problems = read_mapping(folder)
    if mapping_problems is not None:
        mapping_problems += problems
    files: dict[str, list[DumpName]] = {}
    ignored: list[tuple[str, str]] = []
    unusable: list[tuple[DumpName, str]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError as error:
        raise DumpDirError(folder, f"cannot list the folder: {error.strerror or error}") from None
    listing = sorted(entries, key=_ENTRY_NAME)
    usual_name = _USUAL_NAME.fullmatch
    for entry in listing:
        name = entry.name
        if name in _IGNORED_FILES or name.startswith("."):
            continue
        try:  # _is_file inline: a call per entry was 12-18% of a 15,000-file scan (a review)
            regular = entry.is_file()
        except OSError:  # a link loop
            regular = False
        if not regular:
            parsed = _entry_name(entry, mapping)
            if not isinstance(parsed, str):
                unusable.append((parsed, _what_it_is(entry.path)))
            continue
        # the usual name (no numeric or .npy name has its form), read as parse_dump_name
        # reads it: ~5,000 files of a 5,000-op folder take this path
        usual = usual_name(name)
        if usual is not None and "_sgt_graph" not in name and not name.startswith("exception"):
            op_type, op_name, task, stream, stamp = usual.groups()
            op_name = op_key(op_name) if "_lxslice" in op_name else op_name
            parsed = DumpName(
                entry.path, name, op_name, int(stamp), op_type, int(task), int(stream)
            )
        else:
            real = name
            if name.isdigit() or (name.endswith(".npy") and name[:-4].isdigit()):
                if name not in mapping:
                    ignored.append((name, _UNLISTED))
                    continue
                real = mapping[name]
            parsed = parse_dump_name(real, entry.path)
            if isinstance(parsed, str):
                cut = real is not name and not is_exception_dump_name(real)
                if cut and mapping_problems is not None:  # a row cut short?
                    mapping_problems.append(
                        f"{folder / MAPPING_FILE}: {name} is listed as {real[:80]!r}, not a "
                        "dump file's name"
                    )
                    parsed = f"{_UNLISTED} as a dump file"
                ignored.append((name, parsed))
                continue
            op_name = parsed.op_name
        if "_lxslice" in op_name:  # op_key took every _lxslice<N>: msaccucmp skips the rest
            ignored.append((name, "_lxslice without a number (msaccucmp skips it too)"))
            continue
        same_op = files.get(op_name)
        if same_op is None:
            files[op_name] = [parsed]
        else:
            same_op.append(parsed)
    listed: dict[str, int] | None = None  # the folder's own order, made for repeated ops only
    modes: dict[str, int | str] = {}
    for key, names in files.items():
        if len(names) > 1:
            if listed is None:
                listed = {entry.name: position for position, entry in enumerate(entries)}
            names.sort(key=lambda name: listed.get(os.path.basename(name._location), -1))
            mode = task_mode(names[-1].real_name)  # the last listed file decides, as there
            if mode == NORMAL or (isinstance(mode, str) and all(n.task_type != 4 for n in names)):
                names.sort(key=lambda name: _listed_key(name, listed))  # (msaccucmp stops there)
            else:
                modes[key] = mode if isinstance(mode, str) else _ffts_order(names, mode)
    return files, ignored, unusable, modes


def _ffts_order(names: list[DumpName], mode: int) -> int | str:
    """Sort an FFTS+ op's files (in listing order) as msaccucmp does: its mode, or why not."""
    try:
        keys = {id(n): order_key(os.path.basename(n._location), n.real_name, mode) for n in names}
    except ValueError as error:
        return str(error)
    names.sort(key=lambda name: keys[id(name)])
    return mode


def _listed_key(name: DumpName, listed: dict[str, int]) -> tuple[int, int]:
    """Where msaccucmp puts a file among an op's others (it compares the last): by the key it
    reads from the name as listed (see :func:`_msaccucmp_stamp`), ties in the folder's own
    listing order (a stable sort of ``os.listdir``), not the name's (a review: another file
    was compared whenever keys tied, and with stamps of other lengths or a device id after
    the stamp)."""
    listed_name = os.path.basename(name._location)
    return _msaccucmp_stamp(listed_name), listed.get(listed_name, -1)


def _msaccucmp_stamp(listed_name: str) -> int:
    """msaccucmp's sort key of a normal (not FFTS+) dump file: 1 for a numeric name (its
    mapping.csv lookup finds nothing there), else the third dot field of a ``.pb``, ``.npy``
    or ``.quant`` name or the last one of any other, when it is 16 digits; 0 otherwise."""
    if listed_name.isdigit():
        return 1
    fields = listed_name.split(".")
    if listed_name.endswith((".pb", ".npy", ".quant")):
        stamp = fields[2] if len(fields) > 2 else ""
    else:
        stamp = fields[-1]
    return int(stamp) if _is_timestamp(stamp) else 0


def _entry_name(entry: os.DirEntry, mapping: dict[str, str]) -> DumpName | str:
    """An entry's name parsed as a dump file's (the slow path of :func:`_index_folder`), or
    why it is none."""
    name = entry.name
    if name.isdigit() or (name.endswith(".npy") and name[:-4].isdigit()):
        if name not in mapping:
            return _UNLISTED
        name = mapping[name]
    return parse_dump_name(name, entry.path)


def _what_it_is(path: str) -> str:
    """What stands at ``path`` instead of a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a symbolic link to nothing (its target is gone)"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symbolic link loop"
        return f"cannot be read: {error.strerror or error}"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _has_dump_names(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if name == MAPPING_FILE:
                    return True
                if _is_file(entry) and not isinstance(parse_dump_name(name), str):
                    return True
    except OSError:
        return False
    return False


def _is_file(entry: os.DirEntry) -> bool:
    """``entry.is_file()``, False where it raises: a symbolic link loop (ELOOP) raised out of
    the folder's listing, and hid every dump file of the folder after it."""
    try:
        return entry.is_file()
    except OSError:
        return False


def _has_exception_dumps(folder: Path) -> bool:
    try:
        return any(is_exception_dump_name(e.name) for e in os.scandir(folder))
    except OSError:
        return False


def _has_dumps_below(folder: Path, depth: int) -> bool:
    if _has_dump_names(folder):
        return True
    if depth <= 0:
        return False
    return any(_has_dumps_below(sub, depth - 1) for sub in _subfolders(folder))


def _subfolders(folder: Path) -> list[Path]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    return sorted(
        (Path(e.path) for e in entries if not e.name.startswith(".") and _is_folder(e)),
        key=lambda p: p.name,
    )


def _is_folder(entry: os.DirEntry) -> bool:
    """``entry.is_dir()``, False where it raises (a link loop hid every sibling folder)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _choose(folder: Path, candidates: list[Path], graph_name: str | None) -> tuple[Path, str]:
    names = [c.name for c in candidates]
    if graph_name:
        for wanted in (graph_name, sanitize_op_name(graph_name)):
            if wanted in names:
                return folder / wanted, f"model folder {wanted!r} matches the graph name"
    if len(candidates) == 1:
        return candidates[0], f"only sub-folder {names[0]!r}"
    if all(_TIMESTAMP_DIR.match(n) for n in names):
        newest = max(names)
        return folder / newest, f"newest dump time {newest!r} of {len(names)}"
    if all(n.isdigit() for n in names):
        last = max(names, key=int)
        return (
            folder / last,
            f"highest number {last!r} of {sorted(names, key=int)} (last iteration)",
        )
    if graph_name:
        raise DumpDirError(
            folder,
            f"no model folder named {graph_name!r} (the graph name); found {names}. "
            "Pass the folder of the right model.",
        )
    newest_path = max(candidates, key=lambda p: p.stat().st_mtime)
    return newest_path, f"most recently modified of {names} (no graph name to match)"


def scan_dump_dir(path: str | os.PathLike, graph_name: str | None = None) -> DumpDir:
    """Index the dump files under ``path``: the leaf folder itself, or any folder above it (then
    the newest timestamp folder, the model folder named like the graph, the last iteration are
    picked and ``notes`` says so). Raises :class:`DumpDirError` when nothing usable is found."""
    requested = Path(path)
    if not requested.exists():
        raise DumpDirError(requested, "does not exist")
    if not requested.is_dir():
        raise DumpDirError(requested, "is not a folder (give the folder holding the dump files)")
    notes: list[str] = []
    folder = requested
    for _ in range(_MAX_DEPTH + 1):
        if _has_dump_names(folder):
            break
        candidates = [c for c in _subfolders(folder) if _has_dumps_below(c, _MAX_DEPTH)]
        if not candidates:
            if _has_exception_dumps(folder):
                raise DumpDirError(
                    folder,
                    "holds only exception dumps (exception_info.*: a failing kernel's buffers, "
                    "no op name, dtype or shape recorded), no op dumps to compare; list them "
                    "with fusion-switch dumps",
                )
            unusable = _index_folder(folder)[2]
            if unusable:  # a folder of links to unmounted storage said only "no dump files"
                entry, what = unusable[0]
                raise DumpDirError(
                    folder,
                    f"no readable dump file: {len(unusable)} entries are named like dump files "
                    f"but are no files (first: {entry.path}: {what}); mount or copy the dumps",
                )
            raise DumpDirError(
                requested,
                "no dump files found here or in the folders below "
                "(expected names like Conv2D.conv1.3.1700000000000000)",
            )
        folder, why = _choose(folder, candidates, graph_name)
        if len(candidates) > 1 or "graph name" in why:
            notes.append(f"picked {folder.name!r} in {folder.parent}: {why}")
    else:
        raise DumpDirError(requested, f"no dump files within {_MAX_DEPTH} folder levels")
    if folder != requested:
        notes.insert(0, f"dump files are in {folder}")
    mapping_problems: list[str] = []
    files, ignored, unusable, modes = _index_folder(folder, mapping_problems)
    unmatched = []
    if mapping_problems:
        notes.append(
            f"{mapping_problems[0]}"
            + (f" (and {len(mapping_problems) - 1} more)" if len(mapping_problems) > 1 else "")
            + "; the dumps with numeric names it does not list cannot be matched to their ops"
        )
        unlisted = [n for n, why in ignored if why.startswith(_UNLISTED)]
        unmatched = [
            f"{folder / name}: numeric name not listed in a damaged {MAPPING_FILE}; fix it"
            for name in unlisted
        ]
    if not files:
        reasons = "; ".join(f"{n}: {r}" for n, r in ignored[:3])
        raise DumpDirError(folder, f"no usable dump files ({reasons})" if reasons else "empty")
    if ignored:
        notes.append(f"ignored {len(ignored)} file(s) that are not dump files")
    kinds = {n.is_npy for names in files.values() for n in names}
    if len(kinds) > 1:
        notes.append("the folder mixes .npy and binary dumps (msaccucmp refuses such folders)")
    return DumpDir(
        path=folder,
        requested=requested,
        notes=notes,
        ignored=ignored,
        unusable=unusable,
        unmatched=unmatched,
        _files=files,
        _modes=modes,
    )


def holds_dump_files(path: str | os.PathLike) -> bool:
    """``path`` is a folder with dump files of its own: :func:`scan_dump_dir` indexes it as it
    is, whatever the graph name (that name only picks among sub-folders)."""
    return _has_dump_names(Path(path))
