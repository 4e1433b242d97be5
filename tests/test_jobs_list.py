"""The jobs list for daily work: who, when, how long, how much; sort, search, live rows."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from billing.accounts import account_for_user
from billing.models import UsageRecord
from jobs.models import Job, Replica, ReplicaAttempt
from tests.factories import JobFactory, NodeFactory
from tests.job_site import build_site
from tests.test_job_pages import queries

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def ran(job: Job, *, minutes: int, amount: str, cards: int = 1) -> Job:
    """``job`` ran ``minutes`` and was billed ``amount`` in two accrual rows."""
    start = timezone.now() - timedelta(minutes=minutes + 5)
    end = start + timedelta(minutes=minutes)
    Job.objects.filter(pk=job.pk).update(
        state=Job.State.SUCCEEDED, started_at=start, finished_at=end
    )
    node = NodeFactory(gpu_model=job.gpu_model, gpu_count=8)
    replica = Replica.objects.create(job=job, index=0, node=node)
    attempt = ReplicaAttempt.objects.create(
        replica=replica, number=1, node=node, state="succeeded", started_at=start, ended_at=end
    )
    half = Decimal(minutes * 60 * cards) / 2
    for i in range(2):
        UsageRecord.objects.create(
            account=account_for_user(user=job.owner),
            job=job,
            attempt=attempt,
            gpu_model=job.gpu_model,
            unit="card_hour" if job.gpu_model else "core_hour",
            period_start=start + timedelta(minutes=i),
            period_end=start + timedelta(minutes=i + 1),
            quantity=cards,
            unit_seconds=half,
            billable_unit_seconds=half,
            unit_price=Decimal("3"),
            amount=Decimal(amount) / 2,
        )
    job.refresh_from_db()
    return job


def listing(client, **params) -> str:
    return client.get(reverse("jobs:list"), params).content.decode()


def test_the_list_says_who_when_how_long_and_how_much(owner_client, owner, site):
    job = ran(
        JobFactory(owner=owner, project=site.project, gpu_model=site.p4, name="eval"),
        minutes=90,
        amount="4.50",
    )
    html = listing(owner_client)
    for header in ("Owner", "Submitted", "Duration", "Card-hours", "Cost"):
        assert f">{header}</" in html, header
    row = html[html.index(f'href="/jobs/{job.pk}/">eval<') :]
    row = row[: row.index("</tr>")]
    assert "1 h 30 min" in row
    assert ">1.50<" in row  # card-hours: 2 rows of 0.75
    assert "4.50 CNY" in row


def test_project_members_see_each_others_jobs_with_their_owner(client, member, owner, site):
    JobFactory(owner=owner, project=site.project, name="owners-job")
    client.force_login(member)
    html = listing(client)
    assert "owners-job" in html and f"<td>{owner.username}</td>" in html


def test_one_card_reads_one_times_the_model_and_plurals_agree(owner_client, owner, site):
    JobFactory(owner=owner, project=site.project, gpu_model=site.p4, gpu_count=1, name="one")
    JobFactory(
        owner=owner,
        project=site.project,
        gpu_model=site.v100,
        gpu_count=2,
        replicas=3,
        task_mode="distributed",
        name="three",
    )
    JobFactory(
        owner=owner,
        project=site.project,
        gpu_model=None,
        gpu_count=0,
        resource_kind="cpu",
        cpu_milli=1000,
        name="cpu-one",
    )
    html = listing(owner_client)
    assert "1 × 1 P4" not in html
    assert "<td>1 × P4</td>" in html
    assert "<td>2 × V100 · 3 replicas</td>" in html
    assert "<td>1 CPU core</td>" in html
    with override("zh-hans"):
        owner_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
        html = listing(owner_client)
    assert "<td>2 × V100 · 3 个副本</td>" in html and "<td>1 个 CPU 核</td>" in html


def test_sort_by_name_both_ways(owner_client, owner, site):
    for name in ("beta", "alpha", "gamma"):
        JobFactory(owner=owner, project=site.project, name=name)
    html = listing(owner_client, sort="name")
    assert html.index(">alpha<") < html.index(">beta<") < html.index(">gamma<")
    assert 'aria-sort="ascending"' in html
    html = listing(owner_client, sort="-name")
    assert html.index(">gamma<") < html.index(">beta<") < html.index(">alpha<")
    # Paging keeps the sort and the search.
    assert "sort=-name" in html


def test_search_by_name(owner_client, owner, site):
    for name in ("sweep-lr-1", "sweep-lr-2", "eval"):
        JobFactory(owner=owner, project=site.project, name=name)
    html = listing(owner_client, q="SWEEP")
    assert ">sweep-lr-1<" in html and ">sweep-lr-2<" in html and ">eval<" not in html
    assert 'value="SWEEP"' in html


def test_the_table_refreshes_itself_with_htmx(owner_client, owner, site):
    job = JobFactory(owner=owner, project=site.project, name="live")
    html = listing(owner_client, sort="name", q="li")
    assert 'id="jobs-table"' in html and 'hx-trigger="every 5s"' in html
    assert 'hx-get="/jobs/?sort=name&amp;q=li"' in html
    Job.objects.filter(pk=job.pk).update(state=Job.State.RUNNING)
    response = owner_client.get(
        reverse("jobs:list"), {"sort": "name", "q": "li"}, headers={"HX-Request": "true"}
    )
    part = response.content.decode()
    assert "<html" not in part and 'id="jobs-table"' in part and "Running" in part


def test_list_queries_do_not_grow_with_jobs_or_their_usage(owner_client, owner, site):
    ran(JobFactory(owner=owner, project=site.project, gpu_model=site.p4), minutes=5, amount="1")
    one = queries(owner_client, reverse("jobs:list"))
    for _ in range(12):
        ran(JobFactory(owner=owner, project=site.project, gpu_model=site.p4), minutes=5, amount="1")
    assert queries(owner_client, reverse("jobs:list")) == one
    assert queries(owner_client, reverse("jobs:list"), sort="-cost") == one


def test_list_query_count_is_pinned(owner_client, owner, site, django_assert_num_queries):
    for _ in range(3):
        ran(JobFactory(owner=owner, project=site.project, gpu_model=site.p4), minutes=5, amount="1")
    # Session and user, projects, the page's count and rows (figures included), the
    # notifications badge and billing's banner: none of it per job.
    with django_assert_num_queries(7):
        owner_client.get(reverse("jobs:list"), {"sort": "-cost"})
