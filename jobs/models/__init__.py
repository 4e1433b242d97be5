from .images import Image
from .job import Job, JobDataset, JobEvent, JobPort, JobPretrainedModel
from .metrics import AttemptSample, mean_util
from .personal import PersonalTemplate
from .projects import CodeVersion, Dataset, PretrainedModel, Project
from .replicas import PortAllocation, Replica, ReplicaAttempt
from .templates import EstimatePoint, WorkloadTemplate

__all__ = [
    "AttemptSample",
    "CodeVersion",
    "Dataset",
    "EstimatePoint",
    "Image",
    "Job",
    "JobDataset",
    "JobEvent",
    "JobPort",
    "JobPretrainedModel",
    "PersonalTemplate",
    "PortAllocation",
    "PretrainedModel",
    "Project",
    "Replica",
    "ReplicaAttempt",
    "WorkloadTemplate",
    "mean_util",
]
