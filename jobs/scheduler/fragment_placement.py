"""Which nodes a replica (or a gang's replicas) should go to when the workload is known:
where the fragmentation grows least (``fragmentation.py``), best fit breaking ties.

Every node is scored at once on the cluster's arrays (``node_arrays.py``): which
nodes fit, what each would look like after (the cards ``placement.fit_on_node``
would take: the wholly free ones, or the tightest card with room for a share), the
growth of their fragmentation, then best fit's own order (``placement.fit_score``)
among equals. ``placement`` builds what each chosen node takes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .cluster import Cluster, NodeState
from .fragmentation import CardsAfter, grows_everywhere
from .node_arrays import NodeArrays


def choose(
    cluster: Cluster, shape, narrowed: Mapping[int, NodeState] | None = None
) -> list[NodeState] | None:
    """The nodes for ``shape.replicas`` replicas, best first; None if too few fit.

    ``shape`` is a ``placement.Shape`` with whole cards, one virtual GPU, or none;
    ``narrowed``: nodes (by pk) as the job may use them (what reservations leave), scored
    and returned as such.
    """
    if cluster.arrays is None:
        cluster.arrays = NodeArrays(list(cluster.nodes.values()))
    arrays = cluster.arrays.narrowed(narrowed) if narrowed else cluster.arrays
    after = _after(arrays, shape)
    if after is None or len(after.rows) < shape.replicas:
        return None
    grows = grows_everywhere(cluster.workload, arrays, after)
    whole_left = after.whole.sum(1)
    compute_left = after.compute.sum(1)
    typical, rows = cluster.typical, after.rows
    stranded = typical.stranded_percent(
        compute_left, after.cpu, after.memory, np.minimum
    ) - typical.stranded_percent(
        arrays.compute[rows].sum(1), arrays.cpu[rows], arrays.memory[rows], np.minimum
    )
    first, second = (whole_left, stranded) if shape.whole_cards else (stranded, whole_left)
    # np.lexsort sorts by its last key first: growth, then best fit's order, then the name.
    order = np.lexsort((after.rows, after.cpu, compute_left, second, first, grows))
    return [arrays.nodes[row] for row in after.rows[order[: shape.replicas]]]


def _after(arrays, shape) -> CardsAfter | None:
    fits_node = (
        arrays.models_mask(shape.models)[arrays.model]
        & (arrays.cpu >= shape.cpu_milli)
        & (arrays.memory >= shape.memory_mib)
        & (arrays.storage >= shape.storage_gib)
    )
    whole = arrays.whole
    if shape.whole_cards:
        fits_node &= whole.sum(1) >= shape.whole_cards
    elif shape.is_vgpu:
        fits_card = (arrays.compute >= shape.vgpu_percent) & (
            arrays.card_memory >= shape.vgpu_memory_mib
        )
        fits_node &= fits_card.any(1)
    rows = np.flatnonzero(fits_node)
    if not len(rows):
        return None
    compute, memory = arrays.compute[rows].copy(), arrays.card_memory[rows].copy()
    whole = whole[rows]
    if shape.whole_cards:
        taken = whole & (np.cumsum(whole, axis=1) <= shape.whole_cards)
        compute[taken], memory[taken] = 0, 0
        whole = whole & ~taken
    elif shape.is_vgpu:
        # The tightest card with room: least free compute, then memory, then index.
        fits = fits_card[rows]
        tightness = np.where(fits, compute * (1 << 32) + memory, np.iinfo(np.int64).max)
        column = np.argmin(tightness, axis=1)
        everyone = np.arange(len(rows))
        compute[everyone, column] -= shape.vgpu_percent
        memory[everyone, column] -= shape.vgpu_memory_mib
        whole = whole.copy()
        whole[everyone, column] = False
    cpu = arrays.cpu[rows] - shape.cpu_milli
    return CardsAfter(rows, cpu, arrays.memory[rows] - shape.memory_mib, compute, memory, whole)
