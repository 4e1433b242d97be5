"""A workaround for kombu 5.7: a worker must outlive a restart of its Redis broker.

When the broker connection breaks, Celery 5.7's consumer takes the broken
connection apart (``Connection.collect()`` detaches its transport), closes it,
and reconnects. Two things still reach for the old connection afterwards: the
close, which gives back the messages the channel holds unacknowledged, and the
acknowledgement of a task (``acks_late``) that was running when the connection
broke and finishes later. On a detached channel both fail with
``AttributeError`` (the connection details are gone) instead of a connection
error, and the worker shuts down with "Unrecoverable error". So a worker, or a
node agent, that is running a task when Redis restarts dies instead of
reconnecting: the fault drill ``tests/faults/test_service_restarts.py`` caught
the node agent doing so, twice.

Here a detached channel raises the connection error it stands for; kombu and
Celery already handle that (the give-back is skipped, the acknowledgement is
logged as impossible). Nothing is lost by it: Redis still holds such messages
in its unacknowledged index, if it kept its data, and hands them out again
after the visibility timeout, as for a worker killed outright; every task is
idempotent.
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

_connparams = kombu_redis.Channel._connparams


def _connparams_of_attached_channel(self, asynchronous=False):
    transport = self.connection
    if transport is None or transport.client is None:
        raise RedisConnectionError("this channel's broker connection was closed")
    return _connparams(self, asynchronous)


def install() -> None:
    """Idempotent; called where the Celery app is created."""
    kombu_redis.Channel._connparams = _connparams_of_attached_channel
