"""Bad input never reaches the server: a clear message naming the place, exit code 2."""

import pytest

from tests.cli.conftest import write
from trainyard_cli.api_client import accept_language
from trainyard_cli.errors import InputError
from trainyard_cli.job_files import apply_overrides

# Never contacted: input is checked before the server is.
UNREACHABLE = {"TRAINYARD_URL": "http://127.0.0.1:9", "TRAINYARD_TOKEN": "ty_unused"}


def test_yaml_syntax_error_names_the_line_and_column(cli):
    path = write(cli, "job.yaml", "project: vision\nresources:\n  kind: [cpu\ncommand: echo\n")
    result = cli("submit", path, env=UNREACHABLE)
    assert result.returncode == 2, result
    assert "job.yaml: line 4, column" in result.stderr
    assert result.stderr.startswith("trainyard: ") and "Traceback" not in result.stderr


def test_a_file_that_is_not_a_mapping_is_refused(cli):
    path = write(cli, "job.yaml", "- project: vision\n")
    result = cli("check", path, env=UNREACHABLE)
    assert result.returncode == 2
    assert "expected a mapping of job fields" in result.stderr and "got list" in result.stderr


def test_missing_file(cli):
    result = cli("submit", "nowhere.yaml", env=UNREACHABLE)
    assert result.returncode == 2
    assert "trainyard: nowhere.yaml: no such file" in result.stderr


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("gpu_count", "--set expects key=value"),
        ("resources..gpu_count=2", "--set expects key=value"),
        ("command.line=2", "--set command.line=2: command is not a mapping"),
        ("name=[unclosed", "the value is not valid YAML"),
    ],
)
def test_bad_set_syntax(cli, assignment, message):
    path = write(cli, "job.yaml", "project: vision\ncommand: echo hi\n")
    result = cli("submit", path, "--set", assignment, env=UNREACHABLE)
    assert result.returncode == 2
    assert message in result.stderr


def test_no_server_configured_says_how_to_log_in(cli):
    result = cli("jobs")
    assert result.returncode == 2
    assert "TRAINYARD_URL and TRAINYARD_TOKEN unset" in result.stderr
    assert "trainyard login URL" in result.stderr


def test_set_values_are_yaml_scalars_at_dotted_keys():
    data = {"resources": {"kind": "gpu"}, "name": "a"}
    apply_overrides(
        data,
        ["resources.gpu_count=2", "resources.cpu_cores=1.5", "image=", "name='007'", "ports=[80]"],
    )
    assert data == {
        "resources": {"kind": "gpu", "gpu_count": 2, "cpu_cores": 1.5},
        "name": "007",
        "image": None,
        "ports": [80],
    }
    with pytest.raises(InputError):
        apply_overrides(data, ["name.first=x"])


@pytest.mark.parametrize(
    ("environ", "header"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh-hans"),
        ({"LANG": "en_US.UTF-8", "LC_ALL": "zh_SG.UTF-8"}, "zh-hans"),
        ({"LANG": "zh_TW.UTF-8"}, "zh-hant"),
        ({"LANG": "de_DE.UTF-8"}, "de-de"),
        ({"LANG": "C.UTF-8"}, None),
        ({}, None),
    ],
)
def test_accept_language_follows_the_locale(environ, header):
    assert accept_language(environ) == header


def test_login_needs_a_url_and_a_token(cli):
    assert "must start with http:// or https://" in cli("login", "example.org").stderr
    empty = cli("login", "http://127.0.0.1:9", input="\n")
    assert empty.returncode == 2
    assert "no token given" in empty.stderr
    assert not cli.config_file.exists()
