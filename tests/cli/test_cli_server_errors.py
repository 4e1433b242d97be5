"""The server's refusals: per-field messages, a login hint on 401, exit codes 1 and 3."""

from tests.cli.conftest import write

BAD_JOB = """\
project: vision
name: too-big
resources:
  kind: cpu
  cpu_cores: 1
  storage_gib: 1
max_retries: 99
command: echo hi
"""


def test_field_errors_are_printed_per_field(server_cli):
    result = server_cli("submit", write(server_cli, "job.yaml", BAD_JOB))
    assert result.returncode == 1, result
    lines = result.stderr.splitlines()
    assert lines[0] == "trainyard: the server refused POST /jobs (422):"
    assert any(line.startswith("  max_retries: ") for line in lines), result.stderr
    storage = "  storage_gib: Temporary storage must be at least 2 GiB"
    assert any(line.startswith(storage) for line in lines), result.stderr


def test_messages_come_in_the_users_language(server_cli):
    result = server_cli("jobs", "--state", "sleeping", env={"LANG": "zh_CN.UTF-8"})
    assert result.returncode == 1
    assert "  state: 状态须为以下之一：" in result.stderr


def test_a_wrong_token_gets_a_login_hint(server_cli):
    result = server_cli("jobs", env={"TRAINYARD_TOKEN": "ty_not-a-token"})
    assert result.returncode == 1
    assert "refused the token (401): run `trainyard login URL`" in result.stderr


def test_an_unknown_job_is_named(server_cli):
    for command in ("show", "stop", "export", "logs"):
        result = server_cli(command, "999999")
        assert result.returncode == 1, command
        assert result.stderr == "trainyard: no job 999999 that you can see\n", command


def test_an_unreachable_server_exits_3(cli):
    result = cli("free", env={"TRAINYARD_URL": "http://127.0.0.1:9", "TRAINYARD_TOKEN": "ty_x"})
    assert result.returncode == 3
    assert result.stderr.startswith("trainyard: cannot reach http://127.0.0.1:9: ")
