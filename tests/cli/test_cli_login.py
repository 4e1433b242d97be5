"""``trainyard login``: the token is checked, then stored 0600; the environment overrides it."""

import stat


def test_login_stores_a_checked_token_readable_only_by_the_user(cli, live_server, token, project):
    result = cli("login", live_server.url + "/api/v1/", input=token + "\n")
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(cli.config_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(cli.config_file.parent.stat().st_mode) == 0o700
    assert token in cli.config_file.read_text()
    # Later commands need neither the URL nor the token again.
    listed = cli("jobs", "--json")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip().startswith("{")


def test_login_replaces_the_file_and_keeps_it_private(cli, live_server, token, owner):
    cli.config_file.parent.mkdir(parents=True)
    cli.config_file.write_text('{"url": "http://old", "token": "old"}')
    cli.config_file.chmod(0o644)
    result = cli("login", live_server.url, "--token", token)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(cli.config_file.stat().st_mode) == 0o600
    assert '"old"' not in cli.config_file.read_text()
    assert [p.name for p in cli.config_file.parent.iterdir()] == ["config"]


def test_login_with_a_wrong_token_stores_nothing(cli, live_server, owner):
    result = cli("login", live_server.url, "--token", "ty_wrong")
    assert result.returncode == 1
    assert "refused this token (401)" in result.stderr
    assert f"{live_server.url}/profile/" in result.stderr
    assert not cli.config_file.exists()


def test_environment_overrides_the_stored_url_and_token(cli, live_server, token, project):
    assert cli("login", live_server.url, "--token", token).returncode == 0
    # A wrong token in the environment wins over the good stored one...
    refused = cli("jobs", env={"TRAINYARD_TOKEN": "ty_wrong"})
    assert refused.returncode == 1 and "401" in refused.stderr
    # ...and so does an unreachable URL.
    unreachable = cli("jobs", env={"TRAINYARD_URL": "http://127.0.0.1:9"})
    assert unreachable.returncode == 3
    assert "cannot reach http://127.0.0.1:9" in unreachable.stderr


def test_a_config_readable_by_others_is_reported(cli, live_server, token, project):
    cli.config_file.parent.mkdir(parents=True)
    cli.config_file.write_text(f'{{"url": "{live_server.url}", "token": "{token}"}}')
    cli.config_file.chmod(0o644)
    result = cli("jobs")
    assert result.returncode == 0
    assert "readable by others; run chmod 600" in result.stderr
