"""Job files: YAML with the fields of ``POST /api/v1/jobs``, read with ``--set`` overrides
and written by ``export``."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from .errors import InputError


def load_job_file(name: str) -> dict:
    """The mapping in a YAML file (``-``: standard input); errors name the line and column."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}: cannot read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        raise InputError(f"{name}: {_yaml_problem(exc)}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{name}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(
            f"{name}: expected a mapping of job fields (project:, command:, …), "
            f"got {type(data).__name__}"
        )
    return data


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    what = " ".join(part for part in (exc.context, exc.problem) if part)
    return f"{where}{what or 'not valid YAML'}"


def apply_overrides(data: dict, assignments: tuple[str, ...] | list[str]) -> dict:
    """``resources.gpu_count=2`` sets ``data["resources"]["gpu_count"] = 2`` (a YAML scalar)."""
    for assignment in assignments:
        key, equals, text = assignment.partition("=")
        parts = key.strip().split(".")
        if not equals or not all(parts):
            raise InputError(
                f"--set expects key=value (dotted keys, e.g. resources.gpu_count=2), "
                f"got {assignment!r}"
            )
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            raise InputError(f"--set {assignment}: the value is not valid YAML") from None
        target = data
        for depth, part in enumerate(parts[:-1]):
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                where = ".".join(parts[: depth + 1])
                raise InputError(f"--set {assignment}: {where} is not a mapping")
        target[parts[-1]] = value
    return data


class _JobDumper(yaml.SafeDumper):
    """Writes a multi-line string (a command) as a ``|`` block, as a person would."""


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_JobDumper.add_representer(str, _represent_text)


def dump_job(body: dict) -> str:
    return yaml.dump(body, Dumper=_JobDumper, sort_keys=False, allow_unicode=True)
