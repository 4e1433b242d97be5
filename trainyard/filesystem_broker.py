"""kombu's file-system transport with atomic writes, for the embedded (no Redis) run.

kombu creates a message file, then locks and writes it; a consumer in another
process may move and read it in between, find it empty and stop with a JSON
error (the lock is advisory and a rename ignores it). Here a message is
written under a name no consumer picks up, then renamed into place: a reader
sees the whole message or none.
"""

from __future__ import annotations

import os
import uuid
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
