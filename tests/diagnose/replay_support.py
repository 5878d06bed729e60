"""Hand-made replay inputs shared by the replay's unit tests: a graph from a list of ops, and
an evidence store holding given arrays."""

from __future__ import annotations

from fusion_switch.diagnose.evidence import MissingEvidence
from fusion_switch.readers.graph import graph_from_dict


def one_graph(ops: list[dict]):
    """A model of one graph named g holding ``ops`` (GE's JSON dump layout)."""
    return graph_from_dict({"graph": [{"name": "g", "op": ops}], "name": "g"})


class MemoryStore:
    """The evidence store's ``tensor`` over a dict (side, op, kind, index) -> array; a missing
    key is missing evidence, as a dump not found is."""

    def __init__(self, tensors):
        self.tensors, self.files_read, self.unreadable = tensors, set(), {}

    def tensor(self, side, op, kind, index):
        try:
            return self.tensors[(side, op, kind, index)]
        except KeyError:
            raise MissingEvidence(f"no fusion-{side} dump of {op}") from None
