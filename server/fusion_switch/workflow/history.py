"""The edit history of one fusion_switch.cfg, shared by the command line and the editor.

Every change fusion-switch makes to a configuration (all off, apply, on/off of rules, bisect's
result, restore) is recorded *before* the file changes: the previous bytes, who made the change
(`cli`, `editor`, `bisect`), why, and the digest of what we wrote. `restore` brings back any
recorded version byte for byte.

Layout, in the hidden folder beside the configuration::

    .fusion-switch/<cfg name>.history/index.json   versions, written atomically
    .fusion-switch/<cfg name>.history/v0001.before the bytes before change 1, ...

We only ever apply a file that the index names *and* whose content matches the digest the
index recorded: anything else in that folder (a planted file, a symlink, an edited version)
is refused with a message saying so. A configuration that did not exist before a change is
recorded as absent; restoring that version removes the file.

A change we write ourselves (`record(..., then=write)`) is entered in the index as *pending*
before anything else, its previous bytes saved next, then the file written, and the mark
taken off. So a process stopped anywhere (SIGKILL, a full disk, a power cut) leaves an index
that says what happened: a pending version is listed only when the configuration does not
hold the bytes from before it any more (it holds what the change wrote, or later edits: the
change is then kept, its previous bytes being the user's); while the file still holds those
bytes, it is not listed, and the next change under the lock drops it with its file.
An interrupt (Ctrl-C; SIGTERM and SIGHUP, which the command line makes one) drops it at once.
Indexes without the mark (every earlier version's) read as before.

A change the editor makes (`record(..., in_buffer=True)`) goes to its buffer, not to the file:
the file CANN reads changes only when the user saves. Its version is pending too, with the
digest of the file on disk when it was recorded (`on_disk`), and is listed once that file
changed (saved), never before: the terminal's `restore` neither lists a change that is only in
an editor nor measures the file against it (a review: it said "already as version 1 had it"
of a file that never held the change). The editor, which holds the text, passes it as
`holding`: a pending version of the buffer is listed for it while its text differs from the
file as it was then. Pending on disk rather than recorded on save: the text from before is
kept at once, so a server that ends before the save (the editor saves its buffer later) loses
nothing the user wrote. The next record by another writer drops a buffer's pending version
the file never held (the change was discarded, or overwritten from the terminal); one made
from the same buffer keeps it pending; a change the file already holds (a bisection wrote the
file) is recorded as written.

The old single backup (`<cfg>.before-all-off.json`, kept by earlier versions) is read once and
turned into the first version.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .safe_files import (
    Owner,
    UnsafePath,
    atomic_write_bytes,
    atomic_write_text,
    digest,
    ensure_private_dir,
    open_lock_file,
    owner_of,
    read_regular,
)
from .state_dir import state_dir

INDEX_NAME = "index.json"
FORMAT = 1
OLD_BACKUP_KIND = "before-all-off.json"
WHO = ("cli", "editor", "bisect")
_VERSION_FILE = re.compile(r"v(\d{4,})\.before")


class HistoryError(Exception):
    """The history cannot be used as asked; the message says why and what to do."""


class Changed(HistoryError):
    """The file no longer holds what the change was made from."""


class Untrusted(HistoryError):
    """A version's file is not one we wrote (missing from the index or changed since)."""


@dataclass(frozen=True)
class Version:
    number: int
    file: str | None  # None: the configuration did not exist before this change
    digest: str | None  # of the file's bytes
    size: int
    after_digest: str  # of the bytes we wrote (or a 16-hex prefix for a migrated backup)
    who: str
    kind: str  # all-off, off, on, apply, bisect, restore, edit
    why: str
    at: float
    rules: tuple[str, ...] = ()
    pending: bool = False  # its change is being written (or a process died writing it)
    # a change made in an editor's buffer: the digest of the file on disk when it was recorded
    # ("absent": there was none); pending until the file is seen changed from it (saved)
    on_disk: str | None = None

    @property
    def when(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.at))

    @property
    def absent(self) -> bool:
        return self.file is None

    def wrote(self, data: bytes | None) -> bool:
        """Whether `data` (the configuration now) is exactly what this change wrote."""
        return self.wrote_digest(None if data is None else digest(data))

    def wrote_digest(self, found: str | None) -> bool:
        """Whether bytes of digest `found` (None: no file) are exactly what this change wrote."""
        if found is None:
            return self.after_digest == "absent"
        return found.startswith(self.after_digest) and len(self.after_digest) >= 16

    @property
    def held_before(self) -> str:
        """The digest of the file on disk before this change ("absent": there was none)."""
        if self.on_disk is not None:
            return self.on_disk
        return self.digest if self.file is not None and self.digest else "absent"

    def to_json(self) -> dict:
        out = {
            "version": self.number,
            "file": self.file,
            "digest": self.digest,
            "size": self.size,
            "after_digest": self.after_digest,
            "who": self.who,
            "kind": self.kind,
            "why": self.why,
            "at": self.at,
            "rules": list(self.rules),
        }
        if self.pending:
            out["pending"] = True
        if self.on_disk is not None:
            out["on_disk"] = self.on_disk
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Version:
        return cls(
            number=int(obj["version"]),
            file=obj["file"] if obj.get("file") is None else str(obj["file"]),
            digest=None if obj.get("digest") is None else str(obj["digest"]),
            size=int(obj.get("size", 0)),
            after_digest=str(obj["after_digest"]),
            who=str(obj.get("who", "?")),
            kind=str(obj.get("kind", "edit")),
            why=str(obj.get("why", "")),
            at=float(obj.get("at", 0.0)),
            rules=tuple(str(r) for r in obj.get("rules") or ()),
            pending=obj.get("pending") is True,
            on_disk=None if obj.get("on_disk") is None else str(obj["on_disk"]),
        )


@dataclass
class History:
    """The versions of one configuration. Cheap to create; reads the disk on each call."""

    cfg_path: Path
    _migrated: bool = field(default=False, repr=False)
    _lock_depth: int = field(default=0, init=False, repr=False, compare=False)
    # who the history's files belong to while the lock is held (owner_of; None: the creator)
    _owner: Owner | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.cfg_path = Path(os.path.abspath(self.cfg_path))

    @property
    def folder(self) -> Path:
        return state_dir(self.cfg_path) / f"{self.cfg_path.name}.history"

    @property
    def index_path(self) -> Path:
        return self.folder / INDEX_NAME

    # ------------------------------------------------------------------ reading

    def versions(self, holding: bytes | None = None) -> list[Version]:
        """Recorded versions, oldest first. A missing index means no history (after migrating
        an old all-off backup, when there is one). ``holding``: the text an editor holds for
        the file (its buffer, as it would be saved), which lists the buffer's own changes not
        saved yet; without it, the file on disk is what counts."""
        self._migrate_old_backup()
        return self._shown(self._read_index(), holding)

    def latest(self, holding: bytes | None = None) -> Version | None:
        found = self.versions(holding)
        return found[-1] if found else None

    def default(self, holding: bytes | None = None) -> Version | None:
        """What `restore` brings back when not told (see :func:`default_version`)."""
        return default_version(self.versions(holding))

    def get(self, number: int, holding: bytes | None = None) -> Version:
        for v in self.versions(holding):
            if v.number == number:
                return v
        known = ", ".join(str(v.number) for v in self.versions(holding)) or "none"
        raise HistoryError(
            f"{self.cfg_path.name} has no version {number} in its history (versions: {known}); "
            f"list them with 'fusion-switch restore {self.cfg_path} --list'"
        )

    def content(self, version: Version, *, trust_changed: bool = False) -> bytes | None:
        """The bytes before `version`'s change (None: the file did not exist then).

        Raises Untrusted when the stored file is not exactly what we wrote, unless
        `trust_changed` (the user confirmed interactively)."""
        if version.file is None:
            return None
        if not _VERSION_FILE.fullmatch(version.file):
            raise Untrusted(
                f"version {version.number} names {version.file!r}, not a file fusion-switch "
                "writes; refusing it"
            )
        path = self.folder / version.file
        try:
            data = read_regular(path)
        except UnsafePath as exc:
            raise Untrusted(f"version {version.number}: {exc}; refusing it") from None
        except OSError as exc:
            raise HistoryError(
                f"version {version.number}: cannot read {path}: {exc.strerror or exc}"
            ) from None
        if digest(data) != version.digest and not trust_changed:
            raise Untrusted(
                f"version {version.number} ({path}) was changed after fusion-switch wrote it "
                "(its content does not match the digest in the index); refusing to apply it"
            )
        return data

    def unindexed(self) -> list[str]:
        """Files in the history folder that the index does not name (never applied)."""
        if not self.folder.is_dir() or self.folder.is_symlink():
            return []
        named = {v.file for v in self._read_index()} | {INDEX_NAME, ".lock"}
        return sorted(
            p.name
            for p in self.folder.iterdir()
            if p.name not in named and not (p.name.startswith(".") and p.name.endswith(".tmp"))
        )

    # ------------------------------------------------------------------ writing

    def record(
        self,
        before: bytes | None,
        after: bytes | None,
        *,
        who: str,
        kind: str,
        why: str,
        rules: tuple[str, ...] | list[str] = (),
        then: Callable[[], None] | None = None,
        in_buffer: bool = False,
    ) -> Version:
        """Keep `before` as a new version whose change wrote `after`. Call it *before*
        writing `after`, so that a crash in between loses nothing.

        ``in_buffer``: the change is made in an editor's buffer (`before` is its text), not
        written here; the version is pending until the file on disk changes (see the module's
        notes), or listed at once when the file already holds `after`.

        ``then`` writes `after`, under the history's lock, once the file is found to hold
        `before` still (else :class:`Changed`; nothing recorded or written): a user's save
        between the read and the write, or another command's change, is never overwritten.
        The version is pending until ``then`` returns (see the module's notes); when it
        raises, the version is dropped again, unless the file holds `after` all the same."""
        if who not in WHO:
            raise ValueError(f"who must be one of {WHO}")
        if in_buffer and then is not None:
            raise ValueError("a change in an editor's buffer is not written here")
        with self._locked():
            now = self._on_disk()
            if then is not None and now != before:
                raise Changed(
                    f"{self.cfg_path} changed since fusion-switch read it (saved while this "
                    "command waited, or changed by another command); nothing was written: "
                    "run the command again"
                )
            self._migrate_old_backup()
            found = self._read_index()
            # the lock is ours: no writer of a pending is alive (but an editor may still save
            # the buffer this change is made from: its earlier changes there stay pending)
            versions = self._settled(found, before if in_buffer else None)
            dropped = {v.file for v in found} - {v.file for v in versions}
            number = versions[-1].number + 1 if versions else 1
            name = None if before is None else f"v{number:04d}.before"
            version = Version(
                number=number,
                file=name,
                digest=digest(before) if before is not None else None,
                size=len(before) if before is not None else 0,
                after_digest=digest(after) if after is not None else "absent",
                who=who,
                kind=kind,
                why=why,
                at=time.time(),
                rules=tuple(rules),
                pending=then is not None or (in_buffer and now != after),
                on_disk=_digest_of(now) if in_buffer and now != after else None,
            )
            if then is None:  # the editor writes: its previous bytes first, then the index
                self._write_before(name, before)
                try:
                    self._write_index([*versions, version])
                except BaseException:
                    self._remove(name)
                    raise
                self._remove(*dropped - {name})
                return version
            self._write_index([*versions, version])  # pending: listed once the file changed
            self._remove(*dropped - {name})
            try:
                self._write_before(name, before)
                then()
            except BaseException:
                self._abandon(version)
                raise
            self._commit(version)
            return dataclasses.replace(version, pending=False)

    def _write_before(self, name: str | None, before: bytes | None) -> None:
        if name is not None and before is not None:
            atomic_write_bytes(self.folder / name, before, mode=0o600, owner=self._owner)

    def _remove(self, *names: str | None) -> None:
        """Remove these version files (None: no file); the index names none of them."""
        for name in names:
            if name:
                with contextlib.suppress(OSError):
                    os.unlink(self.folder / name)

    def _commit(self, version: Version) -> None:
        """Take the pending mark off `version` (its change is written). Where the index cannot
        be written (a full disk), the mark stays: the file holding the change lists it."""
        with contextlib.suppress(OSError, HistoryError):
            self._write_index(
                [
                    dataclasses.replace(v, pending=False) if v.number == version.number else v
                    for v in self._read_index()
                ]
            )

    def _abandon(self, version: Version) -> None:
        """`version`'s change failed or was interrupted: drop it and its file, unless the file
        holds its change all the same (then it is kept). Never raises: where the index cannot
        be written, the pending mark keeps the version unlisted while the file is as before."""
        try:
            if version.wrote(self._on_disk()):
                self._commit(version)
                return
            versions = self._read_index()
            if versions and versions[-1].number == version.number:
                self._write_index(versions[:-1])
                self._remove(version.file)
        except (OSError, HistoryError):
            pass

    def _shown(self, versions: list[Version], holding: bytes | None = None) -> list[Version]:
        """`versions` as listed: a pending one only when its change was written (or, for an
        editor ``holding`` the buffer it was made in, while that buffer differs from the file
        as it was then)."""
        if not any(v.pending for v in versions):
            return versions
        return [v for v in versions if not v.pending or self._was_written(v) or _held(v, holding)]

    def _settled(self, versions: list[Version], holding: bytes | None = None) -> list[Version]:
        """`versions` with every pending one decided (under the lock, its writer gone): kept
        as written, or dropped; one still only in the buffer ``holding`` (the editor records
        from it) stays pending: it may yet be saved."""
        out = []
        for v in versions:
            if not v.pending:
                out.append(v)
            elif self._was_written(v):
                out.append(dataclasses.replace(v, pending=False))
            elif _held(v, holding):
                out.append(v)
        return out

    def settle(self, holding: bytes | None = None) -> None:
        """Decide the pending versions now (the editor saw its buffer saved): the changes the
        file holds are listed for good. Never raises: they are decided again on the next
        record, and listed by the file meanwhile."""
        try:
            with self._locked():
                found = self._read_index()
                if not any(v.pending for v in found):
                    return
                versions = self._settled(found, holding)
                if versions != found:
                    self._write_index(versions)
                    self._remove(*{v.file for v in found} - {v.file for v in versions})
        except (OSError, HistoryError, UnsafePath):
            pass

    def _was_written(self, version: Version) -> bool:
        """Whether a pending version's change may have been written: the file no longer holds
        the bytes from before it (it holds the change, or later edits, or cannot be read); for
        a change made in an editor's buffer: the file changed since it was recorded (saved)."""
        try:
            now = read_regular(self.cfg_path)
        except FileNotFoundError:
            return version.held_before != "absent"
        except (OSError, UnsafePath):
            return True
        return digest(now) != version.held_before

    def _on_disk(self) -> bytes | None:
        try:
            return read_regular(self.cfg_path)
        except FileNotFoundError:
            return None
        except (OSError, UnsafePath):
            return b""  # unreadable now: not what was read

    def forget(self, version: Version) -> None:
        """Drop the newest version again (its change was not made, e.g. the editor refused
        the edit). Older versions are never dropped."""
        with self._locked():
            self._drop(version)

    def _drop(self, version: Version) -> None:
        versions = self._read_index()
        if not versions or versions[-1].number != version.number:
            return
        self._write_index(versions[:-1])
        if version.file:
            with contextlib.suppress(OSError):
                os.unlink(self.folder / version.file)

    # ------------------------------------------------------------------ internals

    def _read_index(self) -> list[Version]:
        try:
            data = json.loads(read_regular(self.index_path).decode("utf-8"))
        except FileNotFoundError:
            return []
        except UnsafePath as exc:
            raise Untrusted(f"history index: {exc}") from None
        except OSError as exc:
            raise HistoryError(
                f"cannot read the history index {self.index_path}: {exc.strerror or exc}"
            ) from None
        except ValueError:
            raise HistoryError(
                f"the history index {self.index_path} is not valid JSON; move the folder "
                f"{self.folder} away to start a new history"
            ) from None
        try:
            return [Version.from_json(v) for v in data["versions"]]
        except (KeyError, TypeError, ValueError):
            raise HistoryError(
                f"the history index {self.index_path} is not one fusion-switch wrote; move the "
                f"folder {self.folder} away to start a new history"
            ) from None

    def _write_index(self, versions: list[Version]) -> None:
        payload = {
            "format": FORMAT,
            "config": self.cfg_path.name,
            "versions": [v.to_json() for v in versions],
        }
        text = json.dumps(payload, ensure_ascii=False, indent=1) + "\n"
        atomic_write_text(self.index_path, text, owner=self._owner)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time (the editor and a terminal may record at once). Taken again
        inside (the old backup's migration within `record`), it is already held: a second
        ``flock`` on a new descriptor of the same file waited for the first for ever."""
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        owner = owner_of(self.cfg_path)  # run as root: the configuration's owner's history
        ensure_private_dir(self.folder, owner)
        fd = open_lock_file(self.folder / ".lock", owner)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            except ImportError:  # pragma: no cover - not POSIX
                pass
            self._lock_depth, self._owner = 1, owner
            try:
                yield
            finally:
                self._lock_depth, self._owner = 0, None
        finally:
            os.close(fd)

    def _migrate_old_backup(self) -> None:
        """Turn `<cfg>.before-all-off.json` (one backup, older versions) into a version."""
        if self._migrated:
            return
        self._migrated = True
        old = state_dir(self.cfg_path) / f"{self.cfg_path.name}.{OLD_BACKUP_KIND}"
        try:
            data = json.loads(read_regular(old).decode("utf-8"))
            text, saved_at = str(data["text"]), float(data["saved_at"])
            after = str(data["all_off_digest"])
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError):
            return  # unreadable: leave it alone, nothing is lost
        with self._locked():
            versions = self._read_index()
            number = versions[-1].number + 1 if versions else 1
            before = text.encode("utf-8", "surrogatepass")
            name = f"v{number:04d}.before"
            self._write_before(name, before)
            version = Version(
                number=number,
                file=name,
                digest=digest(before),
                size=len(before),
                after_digest=after,
                who="editor",
                kind="all-off",
                why="all fusion off (from the backup kept by an earlier fusion-switch)",
                at=saved_at,
            )
            try:
                self._write_index([*versions, version])
            except BaseException:
                self._remove(name)
                raise
            with contextlib.suppress(OSError):
                old.unlink()


def _digest_of(data: bytes | None) -> str:
    return "absent" if data is None else digest(data)


def _held(version: Version, holding: bytes | None) -> bool:
    """Whether an editor holding ``holding`` holds `version`'s change: it was made in a
    buffer, and the buffer differs from the file as it was when the change was recorded."""
    if version.on_disk is None or holding is None:
        return False
    return digest(holding) != version.on_disk


def default_version(versions: list[Version]) -> Version | None:
    """What `restore` brings back when not told: the state before our last change that was
    not itself a restore (so restoring twice does not undo the first restore; an explicit
    version number does). When that change applied suspects to the all-off file (in the
    configuration from before 'all off': the recipe's end), the state before 'all off', the
    user's own configuration, not the all-off file (a review: restore brought that back, and
    clients that pass no version number could not reach the user's own)."""
    found = [v for v in versions if v.kind != "restore"]
    if not found:
        return None
    return made_from_all_off(versions, found[-1]) or found[-1]


def made_from_all_off(versions: list[Version], version: Version) -> Version | None:
    """The 'all off' version an 'apply' `version` was made from: the one just before it,
    whose change wrote exactly the file the apply replaced. None for any other change."""
    if version.kind != "apply" or version.digest is None or version not in versions:
        return None
    at = versions.index(version)
    prior = versions[at - 1] if at > 0 else None
    if prior is not None and prior.kind == "all-off" and prior.wrote_digest(version.digest):
        return prior
    return None


def describe(version: Version) -> str:
    """One line for listings: number, time, who, why, size."""
    size = "no file" if version.absent else f"{version.size} bytes"
    return f"{version.number:>4}  {version.when}  {version.who:<6}  {version.why}  ({size} before)"
