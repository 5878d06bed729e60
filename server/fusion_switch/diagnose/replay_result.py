"""What the replay found (:mod:`.replay`): the scores of a fused op's outputs, its verdict with
the evidence behind it, and the report of a whole run."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .json_numbers import json_number
from .noise import NoiseFloor
from .replay_decide import UNVERIFIED


@dataclass
class OutputReplay:
    index: int
    origin: str
    dtype: str
    score: float
    observed: float | None  # the same score of fusion on vs fusion off (None: not dumped)
    channel: tuple[float, int] | None = None  # the worst channel's score and index
    # the score of each channel while the replay measures (:meth:`.replay.Replayer.scores`
    # lets them go: a model's hidden size is thousands of channels, for every fused op)
    channels: np.ndarray | None = field(default=None, compare=False, repr=False)
    # an integer output's largest difference from its replay, in steps of one (None: not one)
    steps: float | None = None
    # where a score that is not finite comes from: "replay" (its values are not all finite)
    # or "dump" (the replay's are, the dumped output's are not); None for a finite score
    nonfinite: str | None = None

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "origin": self.origin,
            "dtype": self.dtype,
            "replay_score": json_number(self.score, 6),
            "observed_score": json_number(self.observed, 6),
            "channel_score": json_number(self.channel[0], 6) if self.channel else None,
        }


@dataclass
class ReplayResult:
    """The verdict on one fused op, with the evidence behind it."""

    op: str
    op_type: str
    order: int
    verdict: str
    reason: str = ""
    rules: list[str] = field(default_factory=list)
    rule_source: str = ""
    members: list[str] = field(default_factory=list)
    member_types: list[str] = field(default_factory=list)
    outputs: list[OutputReplay] = field(default_factory=list)
    tolerance: float = 1.0
    channel_tolerance: float | None = None  # of a score per channel, once proven wrong
    evidence: dict = field(default_factory=dict)
    missing_evidence: bool = False
    localisation: dict | None = None

    @property
    def score(self) -> float | None:
        values = [o.score for o in self.outputs]
        return max(values) if values else None

    @property
    def observed(self) -> float | None:
        values = [o.observed for o in self.outputs if o.observed is not None]
        return max(values) if values else None

    @property
    def rules_inferred(self) -> bool:
        """Its rules are inferred (fusion_result.json and the catalogue's patterns), not named
        by its graph: candidates, never proven."""
        return self.rule_source.startswith("inferred")

    @property
    def score_json(self) -> float | None:
        """``to_json()["replay_score"]``, without building the rest (a rule's op list)."""
        return json_number(self.score, 6)

    def to_json(self) -> dict:
        data = {
            "op": self.op,
            "type": self.op_type,
            "order": self.order,
            "verdict": self.verdict,
            "rules": self.rules,
            "rule_source": self.rule_source,
            "original_ops": self.members,
            "replay_score": self.score_json,
            "observed_score": json_number(self.observed, 6),
            "tolerance": json_number(self.tolerance, 6),
            "outputs": [o.to_json() for o in self.outputs],
            "evidence": self.evidence,
        }
        if self.reason:
            data["reason"] = self.reason
        if self.missing_evidence:
            data["missing_evidence"] = True
        if self.localisation is not None:
            data["localisation"] = self.localisation
        return data


@dataclass
class ReplayReport:
    results: list[ReplayResult]
    noise: NoiseFloor
    seconds: float = 0.0
    files_read: int = 0
    unreadable: dict[str, str] = field(default_factory=dict)
    kernels_available: bool = True

    @property
    def replayed(self) -> int:
        return sum(1 for r in self.results if r.verdict != UNVERIFIED)

    def coverage(self) -> float:
        return self.replayed / len(self.results) if self.results else 1.0

    def by_op(self) -> dict[str, ReplayResult]:
        return {r.op: r for r in self.results}
