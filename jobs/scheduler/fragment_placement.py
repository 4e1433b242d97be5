"""Which nodes a replica (or a gang's replicas) should go to when the workload is known:
where the fragmentation grows least (``fragmentation.py``), best fit breaking ties.

Every node is scored at once on the cluster's arrays (``node_arrays.py``): which
nodes fit, what each would look like after (the cards ``placement.fit_on_node``
would take: the wholly free ones, or the tightest card with room for a share, one
where it stays on the workload's share plan first), whether a share leaves that plan
(``share_packing.py``), the growth of their fragmentation, then best fit's own order
(``placement.fit_score``) among equals. ``placement`` builds what each chosen node takes.

A node's scores for a shape depend on that node alone, so they are kept per shape
(``Scores``) and only the rows a placement changed since are scored again: a pass
places thousands of replicas of a few hundred shapes, each changing one node or a few.
What a reservation leaves of some nodes is scored apart (``NodeArrays.subset``) and
takes their place among the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

from .cluster import Cluster, NodeState
from .fragmentation import CardsAfter, grows_everywhere
from .node_arrays import NodeArrays
from .share_packing import SharePlan

# The keys, most significant first: a share off the plan, the growth of F, then best
# fit's order.
KEYS = 6
# Rows changed since a shape was last scored, up to which they are scored one by one
# (``score_node``): numpy's cost per call outweighs its speed on a few rows.
FEW_ROWS = 4

# A node's keys for a shape (``placement.fragment_keys``), None where it does not fit.
ScoreNode = Callable[[Cluster, NodeState, object], tuple | None]


class Keys(NamedTuple):
    """The fitting rows among those scored, and their keys ([key, row])."""

    rows: np.ndarray
    keys: np.ndarray


class Scores:
    """A shape's keys for every row of the arrays, and the row versions they hold for."""

    def __init__(self, count: int) -> None:
        self.version = np.full(count, -1, np.int64)
        self.fits = np.zeros(count, bool)
        self.keys = np.zeros((KEYS, count), np.int64)

    def copy(self) -> Scores:
        other = Scores(0)
        other.version, other.fits, other.keys = (
            self.version.copy(),
            self.fits.copy(),
            self.keys.copy(),
        )
        return other

    def update(self, cluster: Cluster, arrays: NodeArrays, shape, score_node: ScoreNode) -> None:
        stale = np.flatnonzero(self.version != arrays.version)
        if len(stale) > FEW_ROWS:
            scored = _keys(cluster, arrays, shape, stale)
            self.fits[stale] = False
            self.fits[scored.rows] = True
            self.keys[:, scored.rows] = scored.keys
        else:
            for row in stale.tolist():
                keys = score_node(cluster, arrays.nodes[row], shape)
                self.fits[row] = keys is not None
                if keys is not None:
                    self.keys[:, row] = keys
        self.version[stale] = arrays.version[stale]


def choose(
    cluster: Cluster,
    shape,
    score_node: ScoreNode,
    narrowed: Mapping[int, NodeState] | None = None,
) -> list[NodeState] | None:
    """The nodes for ``shape.replicas`` replicas, best first; None if too few fit.

    ``shape`` is a ``placement.Shape`` with whole cards, one virtual GPU, or none;
    ``score_node`` scores one node as the arrays do; ``narrowed``: nodes (by pk) as the
    job may use them (what reservations leave), scored and returned as such.
    """
    if cluster.arrays is None:
        cluster.arrays = NodeArrays(list(cluster.nodes.values()))
    arrays = cluster.arrays
    scores = _scores(cluster, arrays, shape, score_node)
    fits = scores.fits
    nodes = arrays.nodes
    rows, keys = np.flatnonzero(fits), None
    if narrowed:
        subset = arrays.subset(narrowed)
        apart = _keys(cluster, subset, shape, np.arange(len(subset.nodes)))
        given = np.array([arrays.row[pk] for pk in narrowed], np.int64)
        fits = fits.copy()
        fits[given] = False
        rows = np.flatnonzero(fits)
        keys = np.concatenate((scores.keys[:, rows], apart.keys), axis=1)
        nodes = list(nodes)
        for node in subset.nodes:
            nodes[arrays.row[node.pk]] = node
        rows = np.concatenate((rows, [arrays.row[subset.nodes[r].pk] for r in apart.rows]))
        rows = rows.astype(np.int64)
    if len(rows) < shape.replicas:
        return None
    if keys is None:
        keys = scores.keys[:, rows]
    return [nodes[row] for row in _best(rows, keys, shape.replicas)]


def _scores(cluster: Cluster, arrays: NodeArrays, shape, score_node: ScoreNode) -> Scores:
    """The shape's scores on ``arrays``, up to date (kept while the workload is the same)."""
    judged_by = (cluster.workload, cluster.typical)
    if arrays.scores_of != judged_by:
        arrays.scores, arrays.scores_of = {}, judged_by
    key = shape._replace(replicas=1)
    scores = arrays.scores.get(key)
    if scores is None:
        scores = arrays.scores[key] = Scores(len(arrays.nodes))
    scores.update(cluster, arrays, shape, score_node)
    return scores


def _best(rows: np.ndarray, keys: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` rows with the lowest keys (then the lowest row: the node name)."""
    if count == 1:
        # One row: narrowing key by key costs a tenth of sorting them all.
        for key in range(KEYS):
            least = keys[key] == keys[key].min()
            rows, keys = rows[least], keys[:, least]
            if len(rows) == 1:
                return rows
        return rows[[np.argmin(rows)]]
    # np.lexsort sorts by its last key first.
    order = np.lexsort((rows, *keys[::-1]))
    return rows[order[:count]]


def _keys(cluster: Cluster, arrays: NodeArrays, shape, rows: np.ndarray) -> Keys:
    """Which of ``rows`` fit ``shape``, and their keys: whether a share leaves the plan,
    the growth of the fragmentation, then best fit's (wholly free cards left and cards
    newly stranded, in the order the shape weighs them; free compute left; free CPU left)."""
    placed = _after(arrays, shape, rows, cluster.workload.shares_for(shape))
    if placed is None:
        return Keys(np.empty(0, np.int64), np.empty((KEYS, 0), np.int64))
    after, off_plan = placed
    grows = grows_everywhere(cluster.workload, arrays, after)
    whole_left = after.whole.sum(1)
    compute_left = after.compute.sum(1)
    typical, fitting = cluster.typical, after.rows
    stranded = typical.stranded_percent(
        compute_left, after.cpu, after.memory, np.minimum
    ) - typical.stranded_percent(
        arrays.compute[fitting].sum(1), arrays.cpu[fitting], arrays.memory[fitting], np.minimum
    )
    first, second = (whole_left, stranded) if shape.whole_cards else (stranded, whole_left)
    keys = np.array([off_plan, grows, first, second, compute_left, after.cpu], np.int64)
    return Keys(fitting, keys.reshape(KEYS, len(fitting)))


def _after(
    arrays: NodeArrays, shape, rows: np.ndarray, shares: SharePlan | None
) -> tuple[CardsAfter, np.ndarray] | None:
    """Which of ``rows`` fit, what they would be after the shape took its cards, and
    whether its share there leaves ``shares``' plan (1) or not (0)."""
    cpu, node_memory = arrays.cpu[rows], arrays.memory[rows]
    fits_node = (
        arrays.models_mask(shape.models)[arrays.model[rows]]
        & (cpu >= shape.cpu_milli)
        & (node_memory >= shape.memory_mib)
        & (arrays.storage[rows] >= shape.storage_gib)
    )
    whole = arrays.whole[rows]
    if shape.whole_cards:
        fits_node &= whole.sum(1) >= shape.whole_cards
    elif shape.is_vgpu:
        fits_card = (arrays.compute[rows] >= shape.vgpu_percent) & (
            arrays.card_memory[rows] >= shape.vgpu_memory_mib
        )
        fits_node &= fits_card.any(1)
    chosen = np.flatnonzero(fits_node)
    if not len(chosen):
        return None
    rows = rows[chosen]
    compute, memory = arrays.compute[rows], arrays.card_memory[rows]
    whole = whole[chosen]
    off_plan = np.zeros(len(rows), np.int64)
    if shape.whole_cards:
        taken = whole & (np.cumsum(whole, axis=1) <= shape.whole_cards)
        compute[taken], memory[taken] = 0, 0
        whole = whole & ~taken
    elif shape.is_vgpu:
        # The tightest card with room: least free compute, then memory, then index; on
        # the plan before off it.
        fits = fits_card[chosen]
        tightness = compute * (1 << 32) + memory
        if shares is not None:
            off_card = shares.leaves(compute, shape.vgpu_percent)
            tightness += off_card.astype(np.int64) << 50
        tightness = np.where(fits, tightness, np.iinfo(np.int64).max)
        column = np.argmin(tightness, axis=1)
        everyone = np.arange(len(rows))
        if shares is not None:
            off_plan = off_card[everyone, column].astype(np.int64)
        compute[everyone, column] -= shape.vgpu_percent
        memory[everyone, column] -= shape.vgpu_memory_mib
        whole[everyone, column] = False
    cpu, node_memory = cpu[chosen] - shape.cpu_milli, node_memory[chosen] - shape.memory_mib
    return CardsAfter(rows, cpu, node_memory, compute, memory, whole), off_plan
