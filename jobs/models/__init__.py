from .job import Job, JobDataset, JobEvent, JobPort, JobPretrainedModel
from .personal import PersonalTemplate
from .projects import CodeVersion, Dataset, Image, PretrainedModel, Project
from .replicas import PortAllocation, Replica, ReplicaAttempt
from .templates import ApiToken, EstimatePoint, WorkloadTemplate

__all__ = [
    "ApiToken",
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
]
