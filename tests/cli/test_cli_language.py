"""The command reads reasons and events in the language of its locale (LANG → Accept-Language)."""

import pytest

from jobs.services.submit import job_submit
from tests.job_site import build_site, job_body


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def test_show_says_why_in_chinese_under_a_chinese_locale(server_cli, site, owner):
    job = job_submit(user=owner, data=job_body(name="listed"))
    chinese = server_cli("show", str(job.pk), env={"LANG": "zh_CN.UTF-8"})
    assert chinese.returncode == 0, chinese.stderr
    assert "(已排队，等待调度)" in chinese.stdout
    assert "由 owner 提交，等待调度" in chinese.stdout
    english = server_cli("show", str(job.pk))
    assert "(Queued; waiting for the scheduler)" in english.stdout
    assert "Submitted by owner; waiting for the scheduler" in english.stdout
