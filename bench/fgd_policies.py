"""The FGD paper's cluster and placement policies (Random, BestFit, FGD), for placement_fgd.py.

"Beware of Fragmentation" (USENIX ATC '23) evaluates placement in its simulator
(hkust-adsl/kubernetes-scheduler-simulator); the section numbers below refer to
the protocol notes read from that code. Units are the simulator's: milli-CPU,
MiB, milli-GPU per card (1000 = one card).

The cluster is a set of numpy arrays, one row per node (``Nodes``), so that a
policy scores every feasible node for a pod in a few array operations: FGD
scored node by node in Python (35 typical shapes × every card, ~12,000 pods,
1,213 nodes) takes minutes a seed, this way seconds.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import NamedTuple

import numpy as np

MILLI = 1000  # milli-GPU in one card
MAX_SPEC_CPU, MAX_SPEC_GPU = 128_000, 8_000  # BestFit's normalisers (const.go)
MAX_SCORE = 100  # framework.MaxNodeScore
POPULARITY = 95  # % of pods the typical shapes must cover (podPopularityThreshold)

Choice = tuple[int, tuple[int, ...]]  # (node row, card indices)


class Pod(NamedTuple):
    """One pod as the simulator sees it (``GetPodResource`` plus memory for the filter)."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per card; 0 for a CPU-only pod
    gpu_spec: tuple[str, ...]  # models it may run on; () = any

    @property
    def total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def is_gpu(self) -> bool:
        return self.num_gpu > 0 and self.gpu_milli > 0

    @property
    def is_share(self) -> bool:
        return self.num_gpu == 1 and 0 < self.gpu_milli < MILLI

    @property
    def shape(self) -> tuple:
        """The typical-pod key: memory is not part of it (section 5a)."""
        return (self.cpu_milli, self.gpu_milli, self.num_gpu, "|".join(self.gpu_spec))


def pod_of(row: dict[str, str]) -> Pod:
    """A trace row as ``pod_csv_to_yaml.py`` turns it into annotations."""
    count, milli = int(row["num_gpu"]), int(row["gpu_milli"])
    per_card = min(milli, MILLI) if count and milli > 0 else 0
    if count > 1 and 0 < per_card < MILLI:
        raise ValueError(f"{row['name']}: multi-card shares are not in openb; not modelled")
    spec = tuple(model for model in row["gpu_spec"].split("|") if model) if count else ()
    return Pod(row["name"], int(row["cpu_milli"]), int(row["memory_mib"]), count, per_card, spec)


class Nodes:
    """The GPU nodes (sorted by ``sn``) as arrays; cards past a node's count hold -1."""

    def __init__(self, rows: list[dict[str, str]]) -> None:
        rows = sorted(rows, key=lambda row: row["sn"])
        self.models = sorted({row["model"] for row in rows})
        self.model = np.array([self.models.index(row["model"]) for row in rows])
        self.cpu = np.array([int(row["cpu_milli"]) for row in rows], dtype=np.int64)
        self.mem = np.array([int(row["memory_mib"]) for row in rows], dtype=np.int64)
        width = max(int(row["gpu"]) for row in rows)
        self.left = np.full((len(rows), width), -1, dtype=np.int64)
        for i, row in enumerate(rows):
            self.left[i, : int(row["gpu"])] = MILLI
        self.left0 = np.maximum(self.left, 0)  # the same, padding as 0 (for sums, lookups)
        self.total = self.left0.sum(1)
        self.free_cards = (self.left == MILLI).sum(1)
        self.max_left = self.left.max(1)
        self.capacity_milli = int(self.total.sum())
        self._allowed: dict[tuple[str, ...], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.model)

    def feasible(self, pod: Pod) -> np.ndarray:
        """Rows passing NodeResourcesFit (CPU, memory) and Open-Gpu-Share (cards, model)."""
        mask = (self.cpu >= pod.cpu_milli) & (self.mem >= pod.memory_mib)
        if pod.is_gpu:
            if pod.is_share:  # one card with room for the share
                mask &= self.max_left >= pod.gpu_milli
            else:  # whole cards: that many wholly free
                mask &= self.free_cards >= pod.num_gpu
            if pod.gpu_spec:
                mask &= self.allowed(pod.gpu_spec)
        return np.flatnonzero(mask)

    def allowed(self, spec: tuple[str, ...]) -> np.ndarray:
        """Rows whose model is one of ``spec`` (``IsNodeAccessibleToPodByType``)."""
        if spec not in self._allowed:
            self._allowed[spec] = np.isin(self.model, [self.models.index(m) for m in spec])
        return self._allowed[spec]

    def take(self, node: int, pod: Pod, cards: tuple[int, ...]) -> None:
        self.cpu[node] -= pod.cpu_milli
        self.mem[node] -= pod.memory_mib
        row = self.left[node]
        for card in cards:
            row[card] -= pod.gpu_milli
        self.left0[node] = np.maximum(row, 0)
        self.total[node] = self.left0[node].sum()
        self.free_cards[node] = (row == MILLI).sum()
        self.max_left[node] = row.max()


def exclusive_cards(row: np.ndarray, pod: Pod) -> tuple[int, ...]:
    """The lowest-index wholly free cards (``AllocateExclusiveGpuId``); () for CPU pods."""
    if not pod.is_gpu:
        return ()
    return tuple(int(i) for i in np.flatnonzero(row == MILLI)[: pod.num_gpu])


def tightest_card(row: np.ndarray, milli: int) -> int:
    """The fitting card with the least left, lowest index on ties (gpusel ``best``)."""
    fitting = np.where(row >= milli, row, MILLI + 1)
    return int(np.argmin(fitting))


def pick(candidates: np.ndarray, scores: np.ndarray, rank: np.ndarray) -> int:
    """The highest score; among equals the smallest rank (``selectHost`` over node names
    prefixed with a seed-random ``%04d-``)."""
    key = scores.astype(np.int64) * (len(rank) + 1) - rank[candidates]
    return int(candidates[np.argmax(key)])


class RandomPolicy:
    """A uniformly random feasible node; a random fitting card for a share (section 6)."""

    name = "random"

    def __init__(self, rank: np.ndarray, rng: random.Random) -> None:
        self.rng = rng

    def choose(self, nodes: Nodes, pod: Pod) -> Choice | None:
        candidates = nodes.feasible(pod)
        if not len(candidates):
            return None
        # One feasible node: the scheduler skips PreScore, so no draw.
        index = 0 if len(candidates) == 1 else self.rng.randrange(len(candidates))
        node = int(candidates[index])
        row = nodes.left[node]
        if not pod.is_share:
            return node, exclusive_cards(row, pod)
        chosen = -1
        fitting = np.flatnonzero(row >= pod.gpu_milli)
        for count, card in enumerate(fitting, start=1):  # reservoir, as the plugin draws
            if self.rng.randrange(count) == 0:
                chosen = int(card)
        return node, (chosen,)

    def placed(self, nodes: Nodes, node: int) -> None:
        pass


class BestFitPolicy:
    """Least (CPU/128 cores + GPU/8 cards)/2 left, min-max normalised (section 6)."""

    name = "bestfit"

    def __init__(self, rank: np.ndarray, rng: random.Random) -> None:
        self.rank = rank

    def choose(self, nodes: Nodes, pod: Pod) -> Choice | None:
        candidates = nodes.feasible(pod)
        if not len(candidates):
            return None
        cpu_left = (nodes.cpu[candidates] - pod.cpu_milli).astype(np.float64)
        gpu_left = (nodes.total[candidates] - pod.total_milli).astype(np.float64)
        # The float operations in getBestFitScore's order, so truncation matches.
        leftover = cpu_left / MAX_SPEC_CPU * 0.5 + gpu_left / MAX_SPEC_GPU * 0.5
        raw = ((1.0 - leftover) * MAX_SCORE).astype(np.int64)
        node = pick(candidates, normalize(raw), self.rank)
        row = nodes.left[node]
        if pod.is_share:
            return node, (tightest_card(row, pod.gpu_milli),)
        return node, exclusive_cards(row, pod)

    def placed(self, nodes: Nodes, node: int) -> None:
        pass


def normalize(scores: np.ndarray) -> np.ndarray:
    """plugin_utils.go ``NormalizeScore``: min-max to 0..100 in integers; all 0 if equal."""
    low, high = scores.min(), scores.max()
    if high == low:
        return np.zeros_like(scores)
    return (scores - low) * MAX_SCORE // (high - low)


class Typical(NamedTuple):
    cpu_milli: int
    gpu_milli: int
    num_gpu: int
    gpu_spec: tuple[str, ...]
    count: int


def typical_pods(pods: list[Pod]) -> list[Typical]:
    """The most popular shapes until they cover 95 % of the pods (``GetTypicalPods``).

    Ties in count: the larger shape first (``sort.Reverse``). Weights are the
    counts; their sum is the normaliser (the renormalised percentages).
    """
    counts = Counter(pod.shape for pod in pods)
    ranked = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
    expected, covered, kept = POPULARITY * len(pods) / 100, 0, []
    for (cpu, gpu, num, spec), count in ranked:
        if covered >= expected:
            break
        kept.append(Typical(cpu, gpu, num, tuple(m for m in spec.split("|") if m), count))
        covered += count
    return kept


class FgdPolicy:
    """Fragmentation gradient descent (section 5), in integers scaled by the typical count K.

    K·F(node) = Σ_t count_t·f_t, with f_t all free GPU milli unless the node can host
    typical t (then the free milli on cards too small for it). For single-card
    typical shapes that is a sum over cards, Σ_i h(left_i), where h(x) = x·(K −
    counts of the hostable shapes needing ≤ x): a table per (model, CPU level).
    Multi-card typical shapes (none in openb) are subtracted explicitly.
    """

    name = "fgd"

    def __init__(self, rank: np.ndarray, typical: list[Typical], nodes: Nodes) -> None:
        self.rank = rank
        self.model = nodes.model  # node models never change
        self.weight = sum(t.count for t in typical)
        gpu_typical = [t for t in typical if t.gpu_milli > 0]  # CPU-only ones: all GPU is frag
        self.multi = [t for t in gpu_typical if t.num_gpu > 1]
        self.cpu_steps = np.array(sorted({t.cpu_milli for t in gpu_typical}), dtype=np.int64)
        self.access = {
            t: np.array([not t.gpu_spec or m in t.gpu_spec for m in nodes.models])
            for t in gpu_typical
        }
        self.table = self._table([t for t in gpu_typical if t.num_gpu == 1], nodes.models)
        everyone = np.arange(len(nodes))
        self.frag = self._frag(everyone, nodes.cpu, nodes.left)

    def _table(self, single: list[Typical], models: list[str]) -> np.ndarray:
        """h[model, level, x]; level = how many CPU steps the node's CPU left reaches."""
        milli = np.arange(MILLI + 1, dtype=np.int64)
        table = np.zeros((len(models), len(self.cpu_steps) + 1, MILLI + 1), dtype=np.int64)
        for m in range(len(models)):
            for level in range(len(self.cpu_steps) + 1):
                hosted = np.zeros(MILLI + 1, dtype=np.int64)
                for t in single:
                    reached = np.searchsorted(self.cpu_steps, t.cpu_milli) < level
                    if reached and self.access[t][m]:
                        hosted[t.gpu_milli :] += t.count
                table[m, level] = milli * (self.weight - hosted)
        return table

    def _h(self, rows: np.ndarray, cpu: np.ndarray, milli: np.ndarray) -> np.ndarray:
        """h of ``milli`` (any shape, rows along axis 0) on nodes ``rows`` with ``cpu`` left."""
        level = np.searchsorted(self.cpu_steps, cpu, side="right")
        extra = (1,) * (milli.ndim - 1)
        return self.table[self.model[rows].reshape(-1, *extra), level.reshape(-1, *extra), milli]

    def _frag(self, rows: np.ndarray, cpu: np.ndarray, left: np.ndarray) -> np.ndarray:
        """K·F of nodes ``rows`` with ``cpu`` and cards ``left`` (padding -1)."""
        return self._h(rows, cpu, np.maximum(left, 0)).sum(-1) - self._multi(rows, cpu, left)

    def _multi(self, rows: np.ndarray, cpu: np.ndarray, left: np.ndarray) -> np.ndarray | int:
        """Σ count_t·(milli on cards fit for t) over multi-card typical t the node can host."""
        total: np.ndarray | int = 0
        extra = (1,) * (left.ndim - 2)
        for t in self.multi:
            fit = left >= t.gpu_milli
            hosts = (fit.sum(-1) >= t.num_gpu) & (cpu.reshape(-1, *extra) >= t.cpu_milli)
            hosts &= self.access[t][self.model[rows]].reshape(-1, *extra)
            total = total + t.count * np.where(fit, left, 0).sum(-1) * hosts
        return total

    def choose(self, nodes: Nodes, pod: Pod) -> Choice | None:
        rows = nodes.feasible(pod)
        if not len(rows):
            return None
        cpu = nodes.cpu[rows] - pod.cpu_milli
        if pod.is_share:
            scores = self._share_scores(rows, cpu, nodes.left[rows], pod.gpu_milli)
            best = scores.max(1)
            node = pick(rows, best, self.rank)
            return node, (int(np.argmax(scores[np.searchsorted(rows, node)])),)
        left = nodes.left[rows]
        if pod.is_gpu:  # nodeRes.Sub: the wholly free cards go to 0
            taken = (left == MILLI) & (np.cumsum(left == MILLI, axis=1) <= pod.num_gpu)
            left = np.where(taken, 0, left)
        node = pick(rows, self._score(self.frag[rows] - self._frag(rows, cpu, left)), self.rank)
        return node, exclusive_cards(nodes.left[node], pod)

    def _share_scores(
        self, rows: np.ndarray, cpu: np.ndarray, left: np.ndarray, milli: int
    ) -> np.ndarray:
        """Score per (node, card) of the share on that card; -1 where it does not fit.

        The lowest-index card among the best wins (``np.argmax``), as in the plugin.
        """
        left0 = np.maximum(left, 0)
        on_cards = self._h(rows, cpu, left0)
        moved = self._h(rows, cpu, np.maximum(left0 - milli, 0))
        after = on_cards.sum(1)[:, None] - on_cards + moved
        if self.multi:
            width = left.shape[1]
            each = np.repeat(left[:, None, :], width, axis=1)  # [node, card moved, card]
            each[:, np.arange(width), np.arange(width)] -= milli
            after = after - self._multi(rows, cpu, each)
        scores = self._score(self.frag[rows][:, None] - after)
        return np.where(left >= milli, scores, -1)

    def _score(self, reduction: np.ndarray) -> np.ndarray:
        """int(100·sigmoid(ΔF/1000)), ΔF in milli-GPU (``calculateGpuShareFragExtendScore``)."""
        sigmoid = 1.0 / (1.0 + np.exp(-(reduction / (self.weight * 1000.0))))
        return (sigmoid * MAX_SCORE).astype(np.int64)

    def placed(self, nodes: Nodes, node: int) -> None:
        rows = np.array([node])
        self.frag[node] = self._frag(rows, nodes.cpu[rows], nodes.left[rows])[0]
