"""The startup command as a bash script: one command per line, the first failing line fails.

``set -e`` is not used: it ignores failures inside ``&&`` / ``||`` lists,
conditions and functions called from them, so ``false && true`` would pass.
Instead the status of every line is checked right after it runs, which is
exactly "the first line whose exit status is not 0 fails the replica". A
backslash at the end of a line continues it; a construct that spans lines
(``for ...; do`` / ``done``, a here-document) is kept together and checked as
one command, found by asking ``bash -n`` whether the lines so far parse.

A stop, a deadline or a preemption sends TERM to every process of the replica.
The script outlives it (``TERM_TRAP``): killed, it would end the sandbox and
with it the line still saving its checkpoint. The line gets the TERM itself;
once it ends, the script runs no further line and exits with the line's status
(0 for a program that saved and exited cleanly). A command's own ``trap ... TERM``
replaces this one.
"""

from __future__ import annotations

import re
import shlex
import subprocess

STATUS_CHECK = (
    '__trainyard_status=$?; if [ "$__trainyard_status" -ne 0 ]; then '
    'echo "[trainyard] line {line} failed with exit code $__trainyard_status: "{quoted} >&2; '
    'exit "$__trainyard_status"; fi'
)
TERM_TRAP = "trap '__trainyard_term=1' TERM"
AFTER_TERM = (
    'if [ -n "${{__trainyard_term-}}" ]; then '
    'echo "[trainyard] TERM: no line after line {line}" >&2; exit "$__trainyard_status"; fi'
)
QUOTED_COMMAND_CHARS = 200
# What grouping may hand to ``bash -n`` in all: this many times the command, plus a little.
CHECK_BUDGET_FACTOR = 32
CHECK_BUDGET_BASE = 64 * 1024
# What can complete an open construct: closing keywords, brackets and quotes.
CLOSERS = re.compile(r"\b(?:fi|done|esac)\b|[)}\]'\"`]")
# Words, paths, options and $NAME only: no quote, bracket, operator or keyword can be open.
# Each character is read by exactly one branch (a ``$`` only before a word character): with
# ``\$\w+`` beside ``\w`` a line of n variables and one ``>`` backtracked 2^n ways.
PLAIN_WORDS = re.compile(r"(?:[\w./=:,@%+ \t-]|\$(?=\w))*")
KEYWORDS = {
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "for",
    "while",
    "until",
    "do",
    "done",
    "case",
    "esac",
    "select",
    "function",
    "in",
    "time",
    "coproc",
}


def command_script(command: str) -> str:
    """A bash script that runs ``command`` from ``/`` with the per-line rule."""
    body = [TERM_TRAP, "cd /"]
    for line_number, text in command_groups(command):
        body.append(text)
        summary = " ".join(text.split())[:QUOTED_COMMAND_CHARS]
        body.append(STATUS_CHECK.format(line=line_number, quoted=shlex.quote(summary)))
        body.append(AFTER_TERM.format(line=line_number))
    body.append("exit 0")
    return "\n".join(body) + "\n"


def command_groups(command: str) -> list[tuple[int, str]]:
    """(first line number, text) of each command; blank lines and comments are skipped.

    A line joins the open construct before it until ``bash -n`` says the
    construct is complete. Asking costs a process and the construct's length,
    so it is asked only when the new line could close something (a closing
    keyword, bracket or quote, a here-document, a line after an operator), and
    within a budget proportional to the command: a hostile command cannot
    make this quadratic. Past the budget the rest is one group if it parses.
    """
    groups: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    budget = CHECK_BUDGET_FACTOR * len(command) + CHECK_BUDGET_BASE
    lines = _joined_lines(command)
    for position, (number, line) in enumerate(lines):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = number
        pending.append(line)
        if len(pending) > 1 and not _may_close(pending):
            continue
        text = "\n".join(pending)
        if budget < len(text):
            rest = "\n".join([text, *(later for _n, later in lines[position + 1 :])])
            groups.extend(_rest_groups(start, rest))
            return groups
        budget -= len(text)
        if _parses(text):
            groups.append((start, text))
            pending = []
    if pending:
        groups.extend(_apart(start, pending))
    return groups


def _may_close(pending: list[str]) -> bool:
    """Whether the last line could complete the construct the lines before it opened."""
    line, before = pending[-1], pending[-2].rstrip()
    if before.endswith(("&&", "||", "|", "\\")) or any("<<" in text for text in pending):
        return True
    return bool(CLOSERS.search(line))


def _rest_groups(start: int, rest: str) -> list[tuple[int, str]]:
    """Past the budget: everything left as one command if it parses, else line by line."""
    if _parses(rest):
        return [(start, rest)]
    return _apart(start, rest.split("\n"))


def _apart(start: int, lines: list[str]) -> list[tuple[int, str]]:
    """Lines that never parse together: kept apart, so bash reports the error on its line."""
    return [(start + offset, line) for offset, line in enumerate(lines) if line.strip()]


def _joined_lines(command: str) -> list[tuple[int, str]]:
    joined: list[tuple[int, str]] = []
    carry: tuple[int, str] | None = None
    for number, line in enumerate(command.replace("\r\n", "\n").split("\n"), start=1):
        if carry is not None:
            number, line = carry[0], carry[1] + "\n" + line
            carry = None
        if line.endswith("\\") and not line.endswith("\\\\"):
            carry = (number, line)
            continue
        joined.append((number, line))
    if carry is not None:
        joined.append(carry)
    return joined


def _parses(text: str) -> bool:
    """Whether ``text`` is a complete bash command (no error, no unfinished here-document)."""
    if PLAIN_WORDS.fullmatch(text) and not KEYWORDS & set(text.split()):
        return True  # words, paths and $VARIABLES alone cannot open a construct: spare a bash
    result = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, check=False)
    return result.returncode == 0 and not result.stderr.strip()
