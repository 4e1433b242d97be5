"""The demo's images answer the commands researchers type.

A job submitted on a fresh `make run` with `python -c "import torch"` failed with
"python: command not found": Debian's images have only `python3` unless
`python-is-python3` is installed. Each recipe's smoke test runs, as a job does, in every
build (``_smoke_test``): calling `python` there, a build without it fails.
"""

import re

from jobs.images.demo_recipes import DEMO_RECIPES


def test_every_demo_image_is_proved_at_build_to_answer_python():
    for recipe in DEMO_RECIPES:
        assert re.match(r"python -c ", recipe.smoke_test), (recipe.key, recipe.smoke_test)
