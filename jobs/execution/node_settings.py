"""The settings the node's part of the runtime reads (``files``, ``replica/``).

Django's, where Django runs (the platform, the local agent). A Slurm replica's keeper
runs without Django (``replica/keeper.py``): it configures here the few values its plan
carries (``keeper.NODE_SETTINGS``), so that no replica start pays for importing Django
(about 0.04 s of CPU, a third of the keeper's own start).
"""

from __future__ import annotations

from types import SimpleNamespace


class NodeSettings:
    def __init__(self) -> None:
        self._values: SimpleNamespace | None = None

    def configure(self, values: dict) -> None:
        """The keeper's: these values and no others, and no Django."""
        self._values = SimpleNamespace(**values)

    def __getattr__(self, name: str):
        if self._values is not None:
            return getattr(self._values, name)
        from django.conf import settings  # the live settings (tests override them)

        return getattr(settings, name)


settings = NodeSettings()
