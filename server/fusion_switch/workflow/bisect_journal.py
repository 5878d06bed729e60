"""The journal of a bisection, next to the configuration, so that an interrupted run resumes
without re-running finished trials.

It keeps the user's configuration as it was before the first trial (the base every trial is
derived from, and what is put back if the run stops), the settings that make trial results
comparable (command, candidates, repeat, judge), and each finished trial's result keyed by the
digest of the configuration it ran with. The search is deterministic, so replaying it against
the journal asks for the same trials in the same order.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .safe_files import (
    atomic_write_text,
    digest,
    ensure_private_dir,
    folder_owner,
    open_lock_file,
    owner_of,
    read_regular,
)
from .state_dir import state_dir
from .trials import TrialResult

FORMAT = 1


class JournalError(Exception):
    pass


def journal_path(cfg_path: Path) -> Path:
    return state_dir(cfg_path) / f"{cfg_path.name}.bisect.json"


class BisectionRunning(Exception):
    """Another bisection holds this configuration."""


def hold_bisection(cfg_path: Path) -> int:
    """A descriptor holding this configuration's bisection lock (close it to let go). Two
    bisections of one cfg both ran (a review): the second took the first's trial file for a
    save of the user's and recorded it, and side by side they shared trial copies and logs.
    Raises BisectionRunning while another process holds it."""
    import fcntl

    owner = owner_of(cfg_path)  # root's bisection of a user's file: the user's lock
    folder = ensure_private_dir(state_dir(cfg_path), owner)
    fd = open_lock_file(folder / f"{cfg_path.name}.bisect.lock", owner)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise BisectionRunning(
            f"another bisection of {cfg_path} is running; wait for it to end, or stop it "
            "(Ctrl-C, or fusionSwitch.cancelBisect in the editor)"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def logs_dir(cfg_path: Path) -> Path:
    return state_dir(cfg_path) / f"{cfg_path.name}.bisect-logs"


@dataclass
class Journal:
    path: Path
    settings: dict
    base: bytes | None  # the configuration before the first trial (None: it did not exist)
    trials: dict[str, dict] = field(default_factory=dict)
    started: float = field(default_factory=time.time)

    @classmethod
    def load(cls, path: Path) -> Journal:
        try:
            data = json.loads(read_regular(path).decode("utf-8"))
            base = data["base"]
            return cls(
                path,
                dict(data["settings"]),
                None if base is None else base.encode("utf-8", "surrogatepass"),
                dict(data.get("trials") or {}),
                float(data.get("started", time.time())),
            )
        except FileNotFoundError:
            raise
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise JournalError(
                f"the bisection journal {path} cannot be used ({exc}); delete it to start over"
            ) from None

    def save(self) -> None:
        ensure_private_dir(self.path.parent)
        payload = {
            "format": FORMAT,
            "started": self.started,
            "settings": self.settings,
            "base": None if self.base is None else self.base.decode("utf-8", "surrogatepass"),
            "base_digest": None if self.base is None else digest(self.base),
            "trials": self.trials,
        }
        text = json.dumps(payload, ensure_ascii=False, indent=1) + "\n"
        atomic_write_text(self.path, text, folder_owner(self.path.parent))

    def result(self, cfg_text: str) -> TrialResult | None:
        entry = self.trials.get(_key(cfg_text))
        return TrialResult.from_json(entry) if entry else None

    def add(self, cfg_text: str, label: str, result: TrialResult) -> None:
        self.trials[_key(cfg_text)] = {"label": label, **result.to_json()}
        self.save()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _key(cfg_text: str) -> str:
    return digest(cfg_text.encode("utf-8", "surrogatepass"))[:32]
