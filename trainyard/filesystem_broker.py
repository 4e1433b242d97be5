"""kombu's file-system transport with atomic writes, for the embedded (no Redis) run.

kombu creates a message file, then locks and writes it; a consumer in another
process may move and read it in between, find it empty and stop with a JSON
error (the lock is advisory and a rename ignores it). Here a message is
written under a name no consumer picks up, then renamed into place: a reader
sees the whole message or none.

kombu's virtual transports sleep ``polling_interval`` (1 s by default) whenever a poll
brings nothing, and also whenever the consumer may take nothing more (as many tasks in
hand as its prefetch allows; tasks are acknowledged after they run). A worker of short
tasks then takes about its concurrency's worth a second: the demo agent, 4 processes
polling 11 nodes every 2 s, fell behind, its polls expired unread, and nodes were
declared lost on an idle machine. Here it looks again after ``POLLING_SECONDS``; an idle
look is a listing of the folder per queue.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from time import monotonic

from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + ".partial"  # ends otherwise than ".<queue>.msg": never read
        with open(partial, "wb") as handle:
            handle.write(str_to_bytes(dumps(payload)))
        os.replace(partial, final)


class Transport(filesystem.Transport):
    Channel = Channel


POLLING_SECONDS = 0.05


def transport_options(broker_dir: Path) -> dict:
    """``CELERY_BROKER_TRANSPORT_OPTIONS`` for a broker in ``broker_dir`` (made here)."""
    for sub in ("in", "processed", "control"):
        (broker_dir / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(broker_dir / "in"),
        "data_folder_out": str(broker_dir / "in"),
        "processed_folder": str(broker_dir / "processed"),
        "store_processed": False,
        # Broadcast (pidbox) exchanges; kombu's default is ./control in the cwd.
        "control_folder": str(broker_dir / "control"),
        "polling_interval": POLLING_SECONDS,
    }
