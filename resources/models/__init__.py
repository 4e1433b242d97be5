"""GPU models, nodes and their cards, specs, quotas, allocations and snapshots.

Memory is kept in MiB and CPU in millicores (as Kubernetes and the Alibaba
trace do) so that sums and CHECK constraints are exact integers; pages and the
API show GiB and cores. One module per responsibility; import from here.
"""

from .allocations import Allocation, CardAllocation, FreeResourceSnapshot
from .gpu_models import GpuModel, ResourceKind, SlurmGpuType
from .limits import (
    DEFAULT_STORAGE_GIB,
    MAX_VGPU_COMPUTE_PERCENT,
    MIN_DISTRIBUTED_REPLICAS,
    MIN_STORAGE_GIB,
    MIN_VGPU_COMPUTE_PERCENT,
)
from .nodes import GpuCard, Node, node_queue
from .quotas import Quota
from .replica_columns import REPLICA_RESOURCE_COLUMNS, ReplicaResourceColumns
from .shares import UsageWeight, UserShare
from .site import SiteSettings
from .specs import Spec
from .units import MIB_PER_GIB, MILLI_PER_CORE, exact_decimal, exact_gib

__all__ = [
    "DEFAULT_STORAGE_GIB",
    "MAX_VGPU_COMPUTE_PERCENT",
    "MIB_PER_GIB",
    "MILLI_PER_CORE",
    "MIN_DISTRIBUTED_REPLICAS",
    "MIN_STORAGE_GIB",
    "MIN_VGPU_COMPUTE_PERCENT",
    "REPLICA_RESOURCE_COLUMNS",
    "Allocation",
    "CardAllocation",
    "FreeResourceSnapshot",
    "GpuCard",
    "GpuModel",
    "Node",
    "Quota",
    "ReplicaResourceColumns",
    "ResourceKind",
    "SiteSettings",
    "SlurmGpuType",
    "Spec",
    "UsageWeight",
    "UserShare",
    "exact_decimal",
    "exact_gib",
    "node_queue",
]
