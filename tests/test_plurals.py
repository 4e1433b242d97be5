"""Counts read right in both languages: no "All 1 replicas", no "card(s)"."""

import pytest
from django.utils.translation import override

from core.reasons import reason_text
from jobs.estimates.panel import estimate_panel
from tests.factories import GpuModelFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_one_running_replica_is_not_all_1_replicas():
    assert (
        reason_text("running", {"count": 1, "attempt": 2}) == "The replica is running (attempt 2)."
    )
    assert reason_text("running", {"count": 3, "attempt": 1}) == (
        "All 3 replicas are running (attempt 1)."
    )
    with override("zh-hans"):
        assert (
            reason_text("running", {"count": 1, "attempt": 2})
            == "1 个副本正在运行（第 2 次尝试）。"
        )
        assert reason_text("running", {"count": 3, "attempt": 1}) == (
            "3 个副本正在运行（第 1 次尝试）。"
        )


@pytest.mark.parametrize(("cards", "words"), [(1, "on 1 card before"), (2, "on 2 cards before")])
def test_the_estimate_note_counts_cards(cards, words):
    panel = estimate_panel(
        user=UserFactory(),
        template=None,
        gpu_model=GpuModelFactory(name="P4"),
        cards=cards,
        dataset_samples=0,
        with_augmentation=False,
        command="python train.py",
    )
    notes = " ".join(str(n) for n in panel.notes)
    assert "card(s)" not in notes and words in notes
