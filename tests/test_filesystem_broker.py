"""The embedded broker never hands a consumer a half-written message, and a busy consumer
looks for the next one soon."""

import json
from pathlib import Path

from kombu import Connection

from trainyard.filesystem_broker import POLLING_SECONDS, Transport, transport_options


def connection(folder) -> Connection:
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder)}
    return Connection(transport=Transport, transport_options=options)


def test_message_round_trip_leaves_no_partial_file(tmp_path):
    with connection(tmp_path) as conn:
        queue = conn.SimpleQueue("node.a")
        queue.put({"attempt": 7})
        assert not list(tmp_path.glob("*.partial"))
        assert queue.get(timeout=1).payload == {"attempt": 7}


def test_a_message_gets_its_readable_name_only_once_written_whole(tmp_path, monkeypatch):
    import trainyard.filesystem_broker as broker

    seen = []
    real_replace = broker.os.replace

    def replace(source, target):
        # At the moment it becomes visible to consumers, the file is already complete.
        assert not list(tmp_path.glob("*.node.a.msg"))
        seen.append(Path(source).read_bytes())
        real_replace(source, target)

    monkeypatch.setattr(broker.os, "replace", replace)
    with connection(tmp_path) as conn:
        queue = conn.SimpleQueue("node.a")
        queue.put({"whole": True})
        assert len(seen) == 1 and json.loads(seen[0])["body"]  # it parses: it is complete
        assert queue.get(timeout=1).payload == {"whole": True}


def test_a_busy_consumer_looks_again_soon_not_a_second_later(tmp_path):
    # A worker with as many tasks in hand as it may hold (prefetch) finds nothing it may
    # take, and the transport sleeps ``polling_interval`` before it looks again (kombu's
    # default: 1 s). The demo agent polls 11 nodes every 2 s with 4 processes: at 4 tasks
    # a second its polls expired unread and nodes went lost on an idle machine.
    options = transport_options(tmp_path)
    assert options["polling_interval"] == POLLING_SECONDS <= 0.1
    for folder in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert options[folder].startswith(str(tmp_path))
