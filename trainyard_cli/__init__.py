"""``trainyard``: the command-line client of Trainyard's JSON API (``/api/v1``)."""
