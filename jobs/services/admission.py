"""What submit checks about a request's resources, as one answer for every caller.

``job_submit``, the form's "Check feasibility" and ``POST /resources/feasibility``
all ask ``request_admission``: the billing rules first (what the account may
use at all), then whether the request could ever run (node capacity, the
whole quota). So the check never calls feasible what submit refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from billing.rules import job_billing_errors
from resources.feasibility import Feasibility, request_feasibility
from resources.request import ResourceRequest

from .resources_input import FieldErrors


@dataclass(frozen=True)
class Admission:
    billing: dict[str, list[str]]
    feasibility: Feasibility

    def as_feasibility(self) -> Feasibility:
        """Billing's reasons and then capacity's, by field, as the check shows them."""
        errors = FieldErrors()
        errors.merge(self.billing)
        errors.merge(self.feasibility.errors)
        return Feasibility(dict(errors))


def request_admission(
    *, user: AbstractBaseUser, request: ResourceRequest, preemptible: bool = False
) -> Admission:
    return Admission(
        billing=request_billing_errors(user=user, request=request),
        feasibility=request_feasibility(request=request, user=user, preemptible=preemptible),
    )


def request_billing_errors(*, user: AbstractBaseUser, request: ResourceRequest) -> dict:
    """What the account may not use in ``request`` (the form shows it as the model is chosen)."""
    return job_billing_errors(
        user=user,
        gpu_model=request.gpu_model,
        gpu_count=request.gpu_count,
        replicas=request.replicas,
        resource_kind=request.kind,
        vgpu_compute_percent=request.vgpu_compute_percent,
    )
