"""GPU models and aggregated ``*`` models, loaded once and asked in memory.

An aggregated model (``*V100``) stands for its member models (``V100-16G``,
``V100-32G``): a request for it may be placed on a node of any member.
Members are physical models; an aggregate of aggregates is not expanded.

Quota keys of aggregated requests: what a replica holds is charged to the
physical model it was placed on **and** to every aggregated model that
contains that physical model. So a quota on ``gpu:V100-16G`` limits the cards
held on V100-16G nodes however they were asked for, and a quota on
``gpu:*V100`` limits the cards held on all its members together, whether the
jobs asked for ``*V100`` or for a member directly. Asking for the aggregate
can therefore never get around a member's quota.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .models import GpuModel
from .vector import ResourceVector


@dataclass
class ModelCatalog:
    models: dict[str, GpuModel] = field(default_factory=dict)
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)
    aggregates: dict[str, tuple[str, ...]] = field(default_factory=dict)
    names_by_id: dict[int, str] = field(default_factory=dict)
    # Requests and charged vectors seen so far: they repeat a lot in a queue.
    requests: dict = field(default_factory=dict, repr=False)
    charges: dict = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls) -> ModelCatalog:
        models = {m.name: m for m in GpuModel.objects.all()}
        through = GpuModel.members.through.objects.values_list(
            "from_gpumodel__name", "to_gpumodel__name"
        )
        return cls.build(models=models, memberships=list(through))

    @classmethod
    def build(cls, *, models: dict[str, GpuModel], memberships: list[tuple[str, str]]):
        members: dict[str, list[str]] = defaultdict(list)
        aggregates: dict[str, list[str]] = defaultdict(list)
        for aggregate, member in sorted(memberships):
            if aggregate.startswith("*") and not member.startswith("*"):
                members[aggregate].append(member)
                aggregates[member].append(aggregate)
        return cls(
            models=models,
            members={name: tuple(names) for name, names in members.items()},
            aggregates={name: tuple(names) for name, names in aggregates.items()},
            names_by_id={model.pk: name for name, model in models.items()},
        )

    def name_of(self, model_id: int | None) -> str | None:
        return None if model_id is None else self.names_by_id.get(model_id)

    def physical_models(self, name: str) -> tuple[str, ...]:
        """The models whose nodes can serve a request for ``name``."""
        if name.startswith("*"):
            return self.members.get(name, ())
        return (name,)

    def charge(
        self, vector: ResourceVector, *, requested: str | None, physical: str | None
    ) -> ResourceVector:
        """Re-key a quota vector asked for ``requested`` as held on ``physical``.

        The GPU keys move to the physical model and are repeated for each
        aggregated model containing it (see the module docstring).
        """
        if requested is None or physical is None:
            return vector
        charged = {}
        for key, amount in vector.items():
            prefix, _, model = key.partition(":")
            if model != requested:
                charged[key] = charged.get(key, 0) + amount
                continue
            for name in (physical, *self.aggregates.get(physical, ())):
                charged[f"{prefix}:{name}"] = charged.get(f"{prefix}:{name}", 0) + amount
        return ResourceVector(charged)
