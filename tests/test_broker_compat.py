"""A Redis channel whose connection was taken apart reports a lost connection, never a crash.

The fault drill ``tests/faults/test_service_restarts.py`` restarts Redis under
running workers and shows the whole failure (without the workaround the node
agent dies); here is its root in one process, on a Redis of its own: what the
channel does when asked to reach Redis after the worker collected its broken
connection (giving back unacknowledged messages, acknowledging a task).
"""

import pytest
from kombu import Connection
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.faults.recovery import PrivateRedis


@pytest.fixture
def redis(tmp_path):
    server = PrivateRedis(tmp_path).start()
    yield server
    server.stop()


def test_a_channel_of_a_collected_connection_raises_a_connection_error(redis):
    connection = Connection(redis.url)
    channel = connection.default_channel
    channel.client.ping()
    redis.kill9()
    connection.collect()  # what the worker does with a broken connection before reconnecting

    channel._disconnect_pools()  # as the channel's own close does
    with pytest.raises(RedisConnectionError), channel.conn_or_acquire() as client:
        client.ping()  # how the QoS reaches Redis to give back or acknowledge a message
    assert isinstance(RedisConnectionError(), connection.connection_errors)
