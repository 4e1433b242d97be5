"""A job's sampled use as the page, the API and the CLI read it (jobs/usage_metrics.py), and
the NVML path of the agent's sampler with an NVML-shaped fake: the machines the suite runs
on have no NVIDIA card. The real cgroup and /proc path, with real jobs on the real agent:
tests/test_usage_sampling.py; the real NVML path: bench/usage_nvml_check.py on a card."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from jobs.execution.agent import usage
from jobs.models import AttemptSample
from jobs.usage_metrics import job_usage
from tests.running_job import running_job
from trainyard_cli.output import usage_text

pytestmark = pytest.mark.django_db
MIB = 1024 * 1024


@pytest.fixture
def sampled(owner, project):
    """Replica 0 ran a core flat out for 10 s, then slept 10 s; card 2 was busy."""
    run = running_job(owner=owner, project=project)
    start = timezone.now() - timedelta(seconds=30)
    rows = [(0, 0.0, 100, 0), (10, 10.0, 600, 50 * MIB), (20, 10.05, 600, 50 * MIB)]
    for offset, cpu, memory, written in rows:
        AttemptSample.objects.create(
            attempt=run.attempt,
            at=start + timedelta(seconds=offset),
            cpu_seconds=cpu,
            memory_mib=memory,
            write_bytes=written,
            gpus=[{"index": 2, "util": 97, "memory_mib": 30000, "power_w": 250.0, "temp_c": 71}],
        )
    return run


def test_rates_come_from_consecutive_samples(sampled, django_assert_num_queries):
    with django_assert_num_queries(1):
        [attempt] = job_usage(sampled.job)
    assert (attempt["replica"], attempt["attempt"], attempt["node"]) == (0, 1, "gpu-a")
    first, busy, idle = attempt["points"]
    assert first["cpu_percent"] is None and first["memory_mib"] == 100
    assert busy["cpu_percent"] == 100.0 and busy["write_mib_s"] == 5.0
    assert idle["cpu_percent"] == 0.5 and idle["write_mib_s"] == 0.0
    assert idle["gpus"][0]["util"] == 97


def test_the_api_gives_the_same_points_and_names_a_bad_window(owner_client, sampled):
    url = f"/api/v1/jobs/{sampled.job.pk}/metrics"
    [attempt] = owner_client.get(url).json()
    assert [p["cpu_percent"] for p in attempt["points"]] == [None, 100.0, 0.5]
    refused = owner_client.get(url, {"minutes": 0})
    assert refused.status_code == 422 and "minutes" in refused.json()["errors"]
    AttemptSample.objects.filter(cpu_seconds=0).update(at=timezone.now() - timedelta(hours=2))
    [attempt] = owner_client.get(url, {"minutes": 60}).json()
    assert len(attempt["points"]) == 2  # the sample of two hours ago is outside the window


def test_top_shows_each_replicas_latest_figures_and_cards(owner_client, sampled):
    text = usage_text(owner_client.get(f"/api/v1/jobs/{sampled.job.pk}/metrics").json())
    assert "0.5 %" in text and "600 MiB" in text
    assert "97 %" in text and "30000 MiB" in text and "250 W" in text and "71 °C" in text


def test_the_job_page_charts_the_last_hour(owner_client, sampled):
    page = owner_client.get(f"/jobs/{sampled.job.pk}/").content.decode()
    assert 'id="job-usage"' in page and "<polyline points=" in page
    assert "Card 2: GPU 97 %, last hour" in page
    panel = owner_client.get(f"/jobs/{sampled.job.pk}/usage/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "卡 2：GPU 97 %，最近一小时" in panel.content.decode()
    assert "CPU，占一个核心的比例，最近一小时" in panel.content.decode()


class FakeNvml:
    """NVML's shape (pynvml): cards 0–3; card 3 does not answer."""

    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def nvmlDeviceGetHandleByIndex(self, index):  # noqa: N802 (NVML's names)
        if index == 3:
            raise self.NVMLError("GPU is lost")
        return index

    def nvmlDeviceGetUtilizationRates(self, handle):  # noqa: N802
        return SimpleNamespace(gpu=10 * handle, memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle):  # noqa: N802
        return SimpleNamespace(used=(handle + 1) * 1024 * MIB, total=16 * 1024 * MIB)

    def nvmlDeviceGetPowerUsage(self, handle):  # noqa: N802
        return 70_500

    def nvmlDeviceGetTemperature(self, handle, sensor):  # noqa: N802
        return 40 + handle


def test_only_the_attempts_own_cards_are_read_and_a_silent_one_is_left_out(monkeypatch):
    monkeypatch.setitem(usage._nvml_state, "module", FakeNvml())
    assert usage.card_usage([1, 3]) == [
        {"index": 1, "util": 10, "memory_mib": 2048, "power_w": 70.5, "temp_c": 41}
    ]
    assert usage.card_usage([]) == []


def test_without_a_driver_there_are_no_cards(monkeypatch):
    monkeypatch.setitem(usage._nvml_state, "module", None)
    assert usage.card_usage([0, 1]) == []


def test_the_agent_keeps_each_looks_mean_card_use_beside_its_cards(sampled, monkeypatch):
    """What the database averages for the utilisation page and statements (cluster_usage)."""
    monkeypatch.setitem(usage._nvml_state, "module", FakeNvml())
    looked = usage.Usage(1.0, 10, 0, 0, gpus=usage.card_usage([1, 2]))
    monkeypatch.setattr(usage, "attempt_usage", lambda folder, cards: looked)
    AttemptSample.objects.all().delete()

    assert usage.usage_record([(None, sampled.attempt)]) == 1

    [sample] = AttemptSample.objects.all()
    assert [card["util"] for card in sample.gpus] == [10, 20] and sample.gpu_util == 15.0
