"""Reading a log costs bounded time and memory, whatever the job wrote (finding 4).

A job controls its log: 30 MB without a newline made ``GET .../logs?tail=1``
take 70 s (the tail prepended 8 KB blocks until it had seen a newline).
"""

from __future__ import annotations

import tracemalloc

from jobs.execution import files
from jobs.execution.files import log_read, log_tail

# The longest line a page shows (the download stays whole); a default for the old code.
MAX_SHOWN_LINE_CHARS = getattr(files, "MAX_SHOWN_LINE_CHARS", 4096)

MB = 1024 * 1024


def peak_bytes(read) -> tuple[object, int]:
    """What ``read()`` returns and the most memory it held at once (Python allocations)."""
    tracemalloc.start()
    try:
        result = read()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_tail_of_one_huge_line_reads_a_bounded_part_and_marks_the_cut(tmp_path):
    log = tmp_path / "output.log"
    log.write_bytes(b"x" * (30 * MB))
    tail, peak = peak_bytes(lambda: log_tail(log, lines=1))
    assert peak <= 6 * MB  # a few copies of the 1 MiB window; today: twice the whole log
    assert len(tail) <= MAX_SHOWN_LINE_CHARS + 100
    assert "characters cut" in tail


def test_tail_of_many_short_lines_is_exact(tmp_path):
    log = tmp_path / "output.log"
    log.write_text("".join(f"line {i}\n" for i in range(100_000)))
    assert log_tail(log, lines=3).splitlines() == ["line 99997", "line 99998", "line 99999"]


def test_tail_keeps_short_lines_and_cuts_only_the_long_one(tmp_path):
    log = tmp_path / "output.log"
    log.write_bytes(b"first\n" + b"y" * (5 * MB) + b"\nlast\n")
    lines = log_tail(log, lines=3).splitlines()
    assert lines[-1] == "last"
    assert len(lines[-2]) <= MAX_SHOWN_LINE_CHARS + 100
    assert lines[-2].endswith("y")


def test_following_a_huge_line_comes_in_bounded_pieces(tmp_path):
    log = tmp_path / "output.log"
    log.write_bytes(b"z" * (3 * MB))
    lines, offset = log_read(log, offset=0, max_bytes=256 * 1024, complete=False)
    assert offset == 256 * 1024
    assert all(len(line) <= MAX_SHOWN_LINE_CHARS + 100 for line in lines)
