"""The cluster's nodes as numpy arrays, one row each, so that every node is scored at once.

Fragmentation-aware placement scores every fitting node for every replica it places
(``fragmentation.py``); a loop over a thousand ``NodeState``s in Python costs about
a millisecond a replica, these arrays a tenth of that. Rows follow the node names, as
best fit's last tie-break does. ``Cluster.allocate`` refreshes a node's row whenever
it changes the node, so the arrays never disagree with the objects.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import numpy as np

from .cluster import NodeState

# What ``refresh`` writes of a node: made afresh for a subset's rows.
ROW_ARRAYS = (
    "cpu",
    "memory",
    "storage",
    "compute",
    "card_memory",
    "card_size",
    "card_index",
    "whole",
    "fragmentation",
    "version",
)


class NodeArrays:
    """Free CPU, memory, storage per node; free compute and memory per card (padding: 0,
    and never wholly free)."""

    def __init__(self, nodes: Sequence[NodeState]) -> None:
        self.nodes = sorted(nodes, key=lambda node: node.name)
        self.row = {node.pk: row for row, node in enumerate(self.nodes)}
        self.models = sorted({node.model for node in self.nodes}, key=str)
        self.model = np.array([self.models.index(node.model) for node in self.nodes], np.int64)
        # Cards per row: a multiple of 8, so that sums go a machine word at a time.
        count, width = len(self.nodes), max((len(n.cards) for n in self.nodes), default=0)
        width = max(8, -(-width // 8) * 8)
        self.cpu = np.zeros(count, np.int64)
        self.memory = np.zeros(count, np.int64)
        self.storage = np.zeros(count, np.int64)
        self.compute = np.zeros((count, width), np.int64)
        self.card_memory = np.zeros((count, width), np.int64)
        self.card_size = np.zeros((count, width), np.int64)
        self.card_index = np.full((count, width), -1, np.int64)
        self.whole = np.zeros((count, width), bool)  # per card: nobody holds any of it
        self._models_masks: dict = {}
        # Each node's fragmentation for ``fragmentation_of`` (a ``Workload``); -1: not known.
        self.fragmentation = np.full(count, -1, np.int64)
        self.fragmentation_of: object | None = None
        # How many times each row changed: what was scored of a row is good while it holds.
        self.version = np.zeros(count, np.int64)
        # Scores kept between placements by ``fragment_placement`` (per shape), and for what.
        self.scores: dict = {}
        self.scores_of: object | None = None
        for row in range(count):
            self.refresh(self.nodes[row])

    def refresh(self, node: NodeState) -> None:
        """Copy ``node``'s free resources into its row."""
        row = self.row[node.pk]
        self.cpu[row], self.memory[row] = node.cpu_free, node.memory_free
        self.storage[row] = node.storage_free
        for column, card in enumerate(node.cards.values()):
            self.compute[row, column] = card.compute_free
            self.card_memory[row, column] = card.memory_free_mib
            self.card_size[row, column] = card.memory_mib
            self.card_index[row, column] = card.index
            self.whole[row, column] = card.whole_free
        self.fragmentation[row] = -1
        self.version[row] += 1

    def copy_for(self, nodes: Mapping[int, NodeState]) -> NodeArrays:
        """These arrays, and the scores kept on them, for copies of the nodes (by pk): to
        change apart (the start forecast's cluster)."""
        other = copy.copy(self)
        for name in ROW_ARRAYS:
            setattr(other, name, getattr(self, name).copy())
        other.nodes = [nodes[node.pk] for node in self.nodes]
        other.scores = {key: scores.copy() for key, scores in self.scores.items()}
        return other

    def subset(self, nodes: Mapping[int, NodeState]) -> NodeArrays:
        """Arrays of these nodes alone (by pk), as given (what a reservation leaves of them),
        in row order; the same models and card width, so the workload's tables serve both."""
        subset = copy.copy(self)
        subset.nodes = sorted(nodes.values(), key=lambda node: self.row[node.pk])
        subset.row = {node.pk: row for row, node in enumerate(subset.nodes)}
        rows = [self.row[node.pk] for node in subset.nodes]
        subset.model = self.model[rows]
        for name in ROW_ARRAYS:
            array = getattr(self, name)
            setattr(subset, name, np.zeros((len(rows), *array.shape[1:]), array.dtype))
        subset.card_index[:] = -1
        subset.fragmentation_of, subset.scores = None, {}
        for node in subset.nodes:
            subset.refresh(node)
        return subset

    def models_mask(self, models: Sequence[str | None] | None) -> np.ndarray:
        """Per node model: whether it is one of ``models`` (None: any)."""
        key = None if models is None else tuple(models)
        if key not in self._models_masks:
            self._models_masks[key] = np.array(
                [models is None or model in models for model in self.models], bool
            )
        return self._models_masks[key]
