"""Fast "did you mean" for rule names, with the same answers as `Catalogue.suggest`.

`Catalogue.suggest` runs `difflib.get_close_matches` over every name (about 2 ms a call). A file
with thousands of unknown names would take seconds, so this index first finds the candidates
whose `quick_ratio` (shared characters, counted with multiplicity) reaches the cutoff, and runs
difflib's full `ratio` only on those. `ratio <= quick_ratio <= real_quick_ratio` always holds,
so the survivors are exactly the names `get_close_matches` would score.

The shared-character counts of one name against every candidate are computed in pure Python,
all candidates at once (`_Lanes`): no numpy, whose import alone costs a slow first check as
much as the check itself. Results are cached per catalogue, so unchanged names cost nothing on
the next keystroke.
"""

from __future__ import annotations

import heapq
import weakref
from collections import Counter
from difflib import SequenceMatcher

from ..catalogue import SECTIONS, Catalogue

CUTOFF = 0.8
_CACHE_LIMIT = 50_000
_LANE = 16  # bits per candidate in the packed counters of `_Lanes`
_TOP = 1 << (_LANE - 1)


class NameIndex:
    """Everything about a catalogue's names that does not depend on the document text."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.size = len(catalogue)
        self.pools: dict[str | None, list[str]] = {s: catalogue.names(s) for s in SECTIONS}
        self.pools[None] = sorted({n for s in SECTIONS for n in catalogue.rules[s]})
        self.all_names = frozenset(self.pools[None])
        self._lower = {k: {p.lower(): p for p in pool} for k, pool in self.pools.items()}
        self._lanes: dict[str | None, _Lanes] = {}  # built on the pool's first unknown name
        self._cache: dict[tuple[str, str | None], list[str]] = {}
        self.messages: dict[tuple, tuple[str, dict]] = {}  # analysis message cache
        # completion: rule candidates per (section, kind), shared choice lists per cursor flags
        self.completions: dict[tuple, dict | list] = {}
        # facts used by the ALL check
        self.defaults = {
            s: {n: r.default for n, r in catalogue.rules[s].items() if r.default in ("on", "off")}
            for s in SECTIONS
        }
        # names that differ only in capitals (passes renamed between CANN versions)
        by_lower: dict[str, list[str]] = {}
        for name in self.pools[None]:
            by_lower.setdefault(name.lower(), []).append(name)
        self.twins = {
            n: [t for t in group if t != n]
            for group in by_lower.values()
            if len(group) > 1
            for n in group
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
        pool = self.pools.get(section, [])
        if not pool or not name:
            return []
        lanes = self._lanes.get(section)
        if lanes is None:
            lanes = self._lanes[section] = _Lanes(pool)
        candidates = lanes.candidates(name)
        scored = []
        if candidates:
            matcher = SequenceMatcher()
            matcher.set_seq2(name)
            for candidate in candidates:
                matcher.set_seq1(candidate)
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


def _needed(total: int) -> int:
    """The fewest shared characters with which difflib's quick_ratio reaches CUTOFF for two
    names of `total` characters together (difflib's own float arithmetic)."""
    need = max(0, int(CUTOFF * total / 2) - 1)
    while 2.0 * need / total < CUTOFF:
        need += 1
    return need


class _Lanes:
    """The candidates of a pool whose quick_ratio with a name reaches CUTOFF, all at once.

    Each candidate j owns a 16-bit lane of one big integer. For every character c and count k,
    `_upto[c][k]` holds min(k, occurrences of c in candidate j) in lane j; adding the entries
    for a name's character counts gives, in each lane, the characters it shares with that
    candidate (difflib's quick_ratio numerator). Adding 2**15 minus the number needed sets a
    lane's top bit exactly where the cutoff is reached. Lanes never carry into each other:
    a lane holds at most the name's length, and longer names than a lane allows cannot reach
    the cutoff (they would need a candidate at least 2/3 as long).
    """

    def __init__(self, pool: list[str]) -> None:
        self.pool = pool
        self.lengths = [len(p) for p in pool]
        self.longest = max(self.lengths, default=0)
        # lanes overflow only for names of ~13,000 characters; such pools use `_slow`
        self.packed = 2.5 * self.longest + 2 < _TOP
        self._bias: dict[int, int] = {}
        self._upto: dict[str, list[int]] = {}
        self._top = int.from_bytes(_TOP.to_bytes(2, "little") * len(pool), "little")
        if not self.packed:
            return
        counts: dict[str, list[tuple[int, int]]] = {}  # character → [(lane, occurrences)]
        for j, name in enumerate(pool):
            for char, k in Counter(name).items():
                counts.setdefault(char, []).append((j, k))
        size = 2 * len(pool)
        for char, lanes in counts.items():
            running = 0
            upto = [0]
            for k in range(1, max(k for _, k in lanes) + 1):
                at_least_k = bytearray(size)
                for j, count in lanes:
                    if count >= k:
                        at_least_k[2 * j] = 1
                running += int.from_bytes(at_least_k, "little")
                upto.append(running)
            self._upto[char] = upto

    def candidates(self, name: str) -> list[str]:
        la = len(name)
        if 2 * la > 3 * self.longest + 3:  # real_quick_ratio < CUTOFF for every candidate
            return []
        if not self.packed:
            return self._slow(name)
        shared = self._bias_for(la)
        upto = self._upto
        for char, k in Counter(name).items():
            row = upto.get(char)
            if row is not None:
                try:
                    shared += row[k]
                except IndexError:  # more of `char` than any candidate has
                    shared += row[-1]
        reached = shared & self._top
        found = []
        while reached:
            low = reached & -reached
            found.append(self.pool[(low.bit_length() - 1) >> 4])
            reached ^= low
        return found

    def _bias_for(self, la: int) -> int:
        bias = self._bias.get(la)
        if bias is None:
            lanes = bytearray()
            for lb in self.lengths:
                lanes += (_TOP - _needed(la + lb)).to_bytes(2, "little")
            bias = self._bias[la] = int.from_bytes(lanes, "little")
        return bias

    def _slow(self, name: str) -> list[str]:
        matcher = SequenceMatcher()
        matcher.set_seq2(name)
        found = []
        for candidate in self.pool:
            matcher.set_seq1(candidate)
            if matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF:
                found.append(candidate)
        return found


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
