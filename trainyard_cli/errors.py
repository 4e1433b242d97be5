"""What goes wrong, and the exit code each kind of failure gives (listed in ``--help``)."""

from __future__ import annotations

import click

EXIT_OK = 0
EXIT_REFUSED = 1  # the server said no: a 4xx/5xx answer, an infeasible request
EXIT_INPUT = 2  # bad input: YAML, --set, a missing file, no URL or token
EXIT_NETWORK = 3  # the server could not be reached
EXIT_INTERRUPTED = 130

# A followed job's result.
JOB_EXIT_CODES = {"succeeded": 0, "failed": 4, "stopped": 5, "timed_out": 6}

EXIT_CODES_HELP = """\b
Exit codes:
  0  done (a followed job succeeded)
  1  the server refused (its messages are printed), or a request is not feasible
  2  bad input: YAML, --set, a missing file, no URL or token configured
  3  the server cannot be reached
  4  a followed job failed, 5 it was stopped, 6 it timed out
  130  interrupted (Ctrl-C); the job keeps running"""


class CliError(click.ClickException):
    """An error printed as ``trainyard: <message>`` with the class's exit code."""

    exit_code = EXIT_REFUSED

    def show(self, file=None) -> None:
        click.echo(f"trainyard: {self.format_message()}", err=True)


class InputError(CliError):
    exit_code = EXIT_INPUT


class NetworkError(CliError):
    exit_code = EXIT_NETWORK


class ApiError(CliError):
    """A 4xx/5xx answer; ``errors`` are the server's per-field messages (422)."""

    def __init__(
        self, status: int, message: str, errors: dict[str, list[str]] | None = None
    ) -> None:
        self.status = status
        self.errors = errors or {}
        lines = [message] + [
            f"  {field}: {text}" if field != "__all__" else f"  {text}"
            for field, texts in self.errors.items()
            for text in texts
        ]
        super().__init__("\n".join(lines))


class NotFound(ApiError):
    pass
