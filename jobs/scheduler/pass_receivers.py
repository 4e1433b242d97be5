"""Changes that may let waiting jobs start schedule a pass after they commit."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from jobs.lifecycle.pass_requests import schedule_soon
from resources.models import Node, Quota
from resources.signals import capacity_changed

# A heartbeat changes nothing the scheduler reads.
HEARTBEAT_FIELDS = frozenset({"last_heartbeat", "sandboxed"})


@receiver(post_save, sender=Quota, dispatch_uid="schedule_on_quota_save")
@receiver(post_delete, sender=Quota, dispatch_uid="schedule_on_quota_delete")
def quota_changed(sender, **kwargs) -> None:
    schedule_soon()


@receiver(post_save, sender=Node, dispatch_uid="schedule_on_node_save")
def node_saved(sender, update_fields=None, **kwargs) -> None:
    if update_fields and set(update_fields) <= HEARTBEAT_FIELDS:
        return
    schedule_soon()


@receiver(post_delete, sender=Node, dispatch_uid="schedule_on_node_delete")
def node_deleted(sender, **kwargs) -> None:
    schedule_soon()


@receiver(capacity_changed, dispatch_uid="schedule_on_capacity_changed")
def capacity_changed_schedule(sender, **kwargs) -> None:
    schedule_soon()
