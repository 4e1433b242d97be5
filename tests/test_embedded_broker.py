"""The embedded run's broker (``trainyard/filesystem_broker.py``): a folder of messages."""

from trainyard.filesystem_broker import POLLING_SECONDS, transport_options


def test_a_busy_consumer_looks_again_soon_not_a_second_later(tmp_path):
    # A worker with as many tasks in hand as it may hold (prefetch) finds nothing it may
    # take, and the transport sleeps ``polling_interval`` before it looks again (kombu's
    # default: 1 s). The demo agent polls 11 nodes every 2 s with 4 processes: at 4 tasks
    # a second its polls expired unread and nodes went lost on an idle machine.
    options = transport_options(tmp_path)
    assert options["polling_interval"] == POLLING_SECONDS <= 0.1
    for folder in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert options[folder].startswith(str(tmp_path))
