"""The rows the permission matrix asks about: one of everything, owned by someone.

The cast: ``owner`` (owns the project ``vision`` and its job), ``member`` (of
that project), ``outsider`` (a user with nothing of theirs here) and ``staff``
(a superuser who is not in the project). Every model the admin shows has a row,
so each admin page is asked about a real object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib.auth.models import Group
from django.utils import timezone

from accounting.services import usage_accrue
from accounts.models import ApiToken
from billing.accounts import account_for_user
from billing.models import Account, Price, UsageRecord
from jobs.execution.files import attempt_log_path, replica_checkpoint_dir, replica_output_dir
from jobs.models import Job, PersonalTemplate, Replica, ReplicaAttempt, WorkloadTemplate
from jobs.services.personal_templates import personal_template_save
from notifications.models import Kind, Notification
from notifications.services import notification_record, settings_for_user
from resources.free import free_resources_refresh
from resources.models import Node, SiteSettings, SlurmGpuType, UsageWeight, UserShare
from tests.factories import JobFactory, QuotaFactory, SpecFactory, UserFactory
from tests.job_site import build_site

ROLES = ("anonymous", "outsider", "member", "owner", "staff")


@dataclass
class World:
    users: dict  # role -> user (None for anonymous)
    job: Job
    attempt: ReplicaAttempt
    template: PersonalTemplate
    old_token: ApiToken
    account: Account
    tokens: dict[str, str] = field(default_factory=dict)  # role -> bearer token

    def user(self, role: str):
        return self.users[role]


def build_world(*, owner, member, outsider, staff, project) -> World:
    """The job ran on ``v100-a``: its log, ``metrics.json`` and, kept, its checkpoint's
    ``state.pt`` are on disk (TRAINYARD_NODE_ROOT)."""
    site = build_site(project=project, billing_for=[owner, member])
    node = Node.objects.get(name="v100-a")
    job = JobFactory(
        owner=owner,
        project=project,
        gpu_model=site.v100,
        state=Job.State.RUNNING,
        attempt=1,
        keep_checkpoint=True,
    )
    replica = Replica.objects.create(job=job, index=0, node=node)
    attempt = ReplicaAttempt.objects.create(
        replica=replica,
        number=1,
        node=node,
        state="running",
        started_at=timezone.now() - timedelta(hours=2),
    )
    log = attempt_log_path(node.name, attempt.pk)
    log.parent.mkdir(parents=True)
    log.write_text("hello\n")
    output = replica_output_dir(node.name, job.pk, 0)
    output.mkdir(parents=True)
    (output / "metrics.json").write_text("{}")
    checkpoint = replica_checkpoint_dir(node.name, job.pk, 0)
    checkpoint.mkdir(parents=True)
    (checkpoint / "state.pt").write_text("{}")
    template, _created = personal_template_save(user=owner, job=job, name="mine")
    old_token, _secret = ApiToken.issue(user=owner, name="old")
    users = dict(zip(ROLES, (None, outsider, member, owner, staff), strict=True))
    world = World(users, job, attempt, template, old_token, account_for_user(user=owner))
    for role, user in users.items():
        if user is not None:
            world.tokens[role] = ApiToken.issue(user=user, name="api")[1]
            account_for_user(user=user)
    _admin_rows(owner=owner, site=site, job=job, attempt=attempt, account=world.account)
    return world


def _admin_rows(*, owner, site, job, attempt, account) -> None:
    """A row for every model the admin lists that the cast did not already make."""
    Group.objects.create(name="operators")
    SiteSettings.load()
    SpecFactory(name="one-v100", gpu_model=site.v100)
    QuotaFactory(user=owner, gpu_model=site.v100, limit=8)
    SlurmGpuType.objects.create(slurm_type="v100", gpu_model=site.v100)
    UserShare.objects.create(user=owner, shares=2)
    UsageWeight.objects.create(gpu_model=site.v100, weight=8)
    free_resources_refresh()
    WorkloadTemplate.objects.create(
        name="ResNet50",
        task_type=WorkloadTemplate.TaskType.values[0],
        network="ResNet50",
        command_template="python train.py",
    )
    Price.objects.create(
        gpu_model=site.v100, unit="card_hour", amount=Decimal("3"), valid_from=attempt.started_at
    )
    usage_accrue(now=timezone.now())
    assert UsageRecord.objects.filter(account=account).exists()
    notification_record(user=owner, kind=Kind.values[0], event_key="world", data={}, job=job)
    settings_for_user(user=owner).save()
    common = {"user_agent": "test", "ip_address": "10.0.0.9", "username": "x", "path_info": "/"}
    AccessAttempt.objects.create(get_data="", post_data="", failures_since_start=1, **common)
    AccessLog.objects.create(**common)
    AccessFailureLog.objects.create(**common)
    assert Notification.objects.exists()


def make_staff():
    return UserFactory(username="boss", is_staff=True, is_superuser=True)
