"""The startup command: one command per line, run from /, the first failing line fails."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from jobs.execution.replica.script import command_groups, command_script


def run(command: str, tmp_path) -> subprocess.CompletedProcess:
    script = tmp_path / "command.sh"
    script.write_text(command_script(command))
    return subprocess.run(
        ["bash", "--noprofile", "--norc", str(script)], capture_output=True, text=True, cwd=tmp_path
    )


def test_runs_every_line_from_root(tmp_path):
    result = run("pwd\necho two", tmp_path)
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["/", "two"]


def test_second_of_three_lines_fails_and_the_third_never_runs(tmp_path):
    marker = tmp_path / "third-ran"
    result = run(f"echo one\nexit_with() {{ return 3; }}; exit_with\ntouch {marker}", tmp_path)
    assert result.returncode == 3
    assert result.stdout == "one\n"
    assert "line 2 failed with exit code 3" in result.stderr
    assert not marker.exists()


def test_a_failing_list_fails_its_line_where_set_e_would_not(tmp_path):
    result = run("false && true\necho unreachable", tmp_path)
    assert result.returncode == 1
    assert "unreachable" not in result.stdout


def test_multi_line_constructs_and_continuations_stay_together(tmp_path):
    command = "for i in 1 2; do\n  echo $i\ndone\ncat <<END\nhere\nEND\necho a \\\n  b\n# note\n"
    assert [line for line, _ in command_groups(command)] == [1, 4, 7]
    result = run(command, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "2", "here", "a", "b"]


def test_syntax_error_fails_on_its_line(tmp_path):
    result = run('echo ok\necho "unterminated\necho never', tmp_path)
    assert result.returncode != 0
    assert result.stdout == "ok\n"


def bash_checks(monkeypatch) -> list[str]:
    """Count the ``bash -n`` runs grouping a command costs (each is a process on the node)."""
    from jobs.execution.replica import script

    calls: list[str] = []
    real_run = script.subprocess.run

    def counting_run(argv, *args, **kwargs):
        calls.append(kwargs.get("input", ""))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(script.subprocess, "run", counting_run)
    return calls


def test_grouping_work_grows_linearly_with_a_hostile_command(monkeypatch):
    """Finding 3: ``if`` + 4,995 lines of ``x`` ran one ``bash -n`` per line on a growing text."""
    calls = bash_checks(monkeypatch)
    command = "if\n" + "x\n" * 4995
    groups = command_groups(command)
    assert len(groups) == 4996  # it never parses: the lines stay apart, errors on their lines
    assert len(calls) <= 4
    assert sum(len(text) for text in calls) <= 3 * len(command)


def test_grouping_work_is_bounded_when_every_line_could_close_a_construct(monkeypatch):
    calls = bash_checks(monkeypatch)
    command = "if true; then\n" + "echo ')' \"x\" done fi\n" * 3000
    command_groups(command)
    assert sum(len(text) for text in calls) <= 40 * len(command)


def test_a_command_that_parses_as_a_whole_keeps_its_constructs(monkeypatch, tmp_path):
    calls = bash_checks(monkeypatch)
    body = "".join(f"  echo {i}\n" for i in range(2000))
    command = f"for i in 1; do\n{body}done\necho after"
    assert [line for line, _ in command_groups(command)] == [1, 2003]
    assert len(calls) <= 4
    result = run(command, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "after"


def test_a_line_of_many_variables_and_a_redirect_is_grouped_at_once():
    """A user's line of ``$VARIABLES`` and one ``>`` made the plain-words check backtrack
    2^n ways before it failed: 6 variables took 20 s, 40 would hold the agent's start of the
    replica for ever. Run apart, so that a hang fails here instead of hanging the suite."""
    line = "echo " + " ".join(f"$VAR_{i}" for i in range(40)) + " > $TRAINYARD_DATA_OUT/x"
    code = f"from jobs.execution.replica.script import command_groups as g; print(g({line!r}))"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=60,  # microseconds once linear; 2^40 steps never end
        check=True,
    )
    assert result.stdout.strip() == repr([(1, line)])


def test_term_reaches_the_running_line_which_may_finish_then_no_line_runs(tmp_path):
    """What a preemption needs: the line saves its checkpoint on TERM, exits 0, and the
    script stops there with that status (killed at once, it would end the sandbox)."""
    marker, saved = tmp_path / "next-line-ran", tmp_path / "saved"
    saving = f"trap 'touch {saved}; exit 0' TERM; echo up; sleep 30 & wait"
    script = tmp_path / "command.sh"
    script.write_text(command_script(f"bash -c {saving!r}\ntouch {marker}"))
    process = subprocess.Popen(
        ["bash", "--noprofile", "--norc", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout.readline() == "up\n"  # both traps are set by now
    os.killpg(process.pid, signal.SIGTERM)  # as the agent does: every process of the replica
    _out, errors = process.communicate(timeout=10)
    assert process.returncode == 0, errors
    assert saved.exists() and not marker.exists()
    assert "TERM: no line after line 1" in errors
