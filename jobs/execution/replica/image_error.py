"""The error of an image that cannot be used, apart from the cache that raises it: a
replica's keeper catches it on every start, and only a job with an image pays for
importing the cache (``image_cache.py``, with hashlib's OpenSSL)."""

from __future__ import annotations


class ImageError(Exception):
    """An image that cannot be used; the message says why, for the attempt's reason.

    ``node_fault``: the node cannot unpack images (no umoci, a hung unpack); another
    node may. Otherwise the image itself is missing or broken, on every node alike.
    """

    def __init__(self, message: str, *, node_fault: bool = False) -> None:
        super().__init__(message)
        self.node_fault = node_fault
