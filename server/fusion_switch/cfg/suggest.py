"""Fast "did you mean" for rule names, with the same answers as `Catalogue.suggest`.

`Catalogue.suggest` runs `difflib.get_close_matches` over every name (about 2 ms a call). A file
with thousands of unknown names would take seconds, so this index first discards candidates
that cannot reach the cutoff (length ratio, then a character-count bound computed with numpy for
all candidates at once; both are upper bounds of difflib's ratio) and runs difflib only on the
survivors. Results are cached per catalogue, so unchanged names cost nothing on the next keystroke.
"""

from __future__ import annotations

import heapq
import weakref
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from ..catalogue import SECTIONS, Catalogue

CUTOFF = 0.8
_ALPHABET = 128  # ASCII counts exactly; other characters share one bin (still an upper bound)
_CACHE_LIMIT = 50_000


class NameIndex:
    """Everything about a catalogue's names that does not depend on the document text."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.size = len(catalogue)
        self.pools: dict[str | None, list[str]] = {s: catalogue.names(s) for s in SECTIONS}
        self.pools[None] = sorted({n for s in SECTIONS for n in catalogue.rules[s]})
        self.all_names = frozenset(self.pools[None])
        self._lower = {k: {p.lower(): p for p in pool} for k, pool in self.pools.items()}
        # per pool: (lengths, character counts), built on the first unknown name of the pool;
        # a file whose names are all known never imports numpy (0.2 s of server start-up)
        self._arrays: dict[str | None, tuple[np.ndarray, np.ndarray]] = {}
        self._cache: dict[tuple[str, str | None], list[str]] = {}
        self.messages: dict[tuple, tuple[str, dict]] = {}  # analysis message cache
        self.completions: dict[tuple[str, str], dict[str, tuple]] = {}  # completion item data
        # facts used by the ALL check
        self.defaults = {
            s: {n: r.default for n, r in catalogue.rules[s].items() if r.default in ("on", "off")}
            for s in SECTIONS
        }
        self.forbidden = {
            s: sorted(n for n, r in catalogue.rules[s].items() if r.cannot_switch_off)
            for s in SECTIONS
        }

    def suggest(self, name: str, section: str | None = None, n: int = 3) -> list[str]:
        key = (name, section)
        found = self._cache.get(key)
        if found is None:
            found = self._compute(name, section, 3)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
                self.messages.clear()
            self._cache[key] = found
        return found[:n]

    def _compute(self, name: str, section: str | None, n: int) -> list[str]:
        import numpy as np

        pool = self.pools.get(section, [])
        if not pool or not name:
            return []
        arrays = self._arrays.get(section)
        if arrays is None:
            arrays = self._arrays[section] = (np.array([len(p) for p in pool]), _count_matrix(pool))
        lengths, counts = arrays
        la = len(name)
        # real_quick_ratio and quick_ratio bounds: 2*M/(la+lb) with M <= min(la, lb) and
        # M <= shared character counts.
        total = lengths + la
        ok = 2.0 * np.minimum(lengths, la) >= CUTOFF * total
        if not ok.any():  # e.g. a pasted 5 MB "name": no candidate can be close
            return self._exact_case(name, section, [])
        shared = np.minimum(counts, _counts(name)).sum(axis=1)
        ok &= 2.0 * shared >= CUTOFF * total
        matcher = SequenceMatcher()
        matcher.set_seq2(name)
        scored = []
        for i in np.flatnonzero(ok):
            candidate = pool[i]
            matcher.set_seq1(candidate)
            if matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF:
                score = matcher.ratio()
                if score >= CUTOFF:
                    scored.append((score, candidate))
        return self._exact_case(name, section, [x for _, x in heapq.nlargest(n, scored)])[:n]

    def _exact_case(self, name: str, section: str | None, found: list[str]) -> list[str]:
        """A name differing only in case comes first (as in Catalogue.suggest)."""
        exact_case = self._lower[section].get(name.lower())
        if exact_case and exact_case != name:
            return [exact_case, *[f for f in found if f != exact_case]]
        return found


def _counts(name: str) -> np.ndarray:
    import numpy as np

    codes = np.fromiter((min(ord(c), _ALPHABET) for c in name), dtype=np.int64, count=len(name))
    return np.bincount(codes, minlength=_ALPHABET + 1).astype(np.int32)


def _count_matrix(pool: list[str]) -> np.ndarray:
    import numpy as np

    if not pool:
        return np.zeros((0, _ALPHABET + 1), dtype=np.int32)
    return np.stack([_counts(p) for p in pool])


_indexes: dict[int, tuple[weakref.ref, NameIndex]] = {}


def name_index(catalogue: Catalogue) -> NameIndex:
    """The (cached) index of a catalogue; rebuilt when the catalogue grows or shrinks."""
    entry = _indexes.get(id(catalogue))
    if entry is not None and entry[0]() is catalogue and entry[1].size == len(catalogue):
        return entry[1]
    index = NameIndex(catalogue)
    key = id(catalogue)
    _indexes[key] = (weakref.ref(catalogue, lambda _ref, key=key: _indexes.pop(key, None)), index)
    return index
