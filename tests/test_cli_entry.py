"""The top-level entry (hipwizard/cli/__init__.py): what `hipwizard --help` offers, the wizard's own options
(`--web --host --port --demo DIR`), and their bad values, through the real `hipwizard.cli.main`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from hipwizard.cli import main


def _run(*args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipwizard", *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env})


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hipwizard: error: "), err
    return lines[0]


def test_help_shows_the_wizard_options_and_dir(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for option in ("--web", "--host HOST", "--port PORT", "--demo", "[DIR]"):
        assert option in out, option
    assert "127.0.0.1" in out and "token" in out


@pytest.mark.parametrize("port, says", [
    ("abc", "--port 'abc' is not a number"),
    ("80.5", "--port '80.5' is not a number"),
    ("0", "--port 0 is out of range"),
    ("65536", "--port 65536 is out of range"),
    ("-1", "--port -1 is out of range"),
])
def test_bad_web_port_is_one_line_exit_2(tmp_path, capsys, port, says):
    assert main(["--web", f"--port={port}", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert says in _one_error_line(captured.err)
    assert captured.out == ""


@pytest.mark.parametrize("argv, says", [
    (["--port", "8000"], "--port only applies with --web"),
    (["--host", "127.0.0.1"], "--host only applies with --web"),
    (["--web", "--host", ""], "is not a host name or address"),
    (["--web", "--host", "evil.example/x"], "is not a host name or address"),
])
def test_web_options_misused_are_one_line_exit_2(tmp_path, capsys, argv, says):
    assert main([*argv, str(tmp_path)]) == 2
    assert says in _one_error_line(capsys.readouterr().err)


def test_web_port_in_use_is_one_line_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _run("--web", "--port", str(port), str(tmp_path))
    assert done.returncode == 2, done
    line = _one_error_line(done.stderr)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "in use" in line
    assert "token=" not in done.stdout  # no URL printed for a server that never listened


def test_web_host_that_does_not_resolve_is_one_line_exit_2(tmp_path):
    done = _run("--web", "--host", "no-such-host.invalid", "--port", "8765", str(tmp_path))
    assert done.returncode == 2, done
    assert "cannot listen on no-such-host.invalid:8765" in _one_error_line(done.stderr)


# --- a mistyped sub-command is not a workspace folder -----------------------------------------------------

@pytest.mark.parametrize("typed, meant", [("statsu", "status"), ("hipfy", "hipify"), ("trian", "train"),
                                          ("reveiw", "review"), ("doctr", "doctor")])
def test_mistyped_command_is_rejected_with_a_suggestion(tmp_path, monkeypatch, capsys, typed, meant):
    monkeypatch.chdir(tmp_path)
    assert main([typed]) == 2
    assert _one_error_line(capsys.readouterr().err) == \
        f"hipwizard: error: unknown command {typed!r} (did you mean {meant!r}?)"
    assert not (tmp_path / typed).exists()


@pytest.mark.parametrize("typed", ["nosuchproject", "./statsu", "src"])
def test_missing_folder_not_like_a_command_keeps_its_error(tmp_path, monkeypatch, capsys, typed):
    monkeypatch.chdir(tmp_path)
    assert main([typed]) == 2
    assert _one_error_line(capsys.readouterr().err) == \
        f"hipwizard: error: {typed.removeprefix('./')} does not exist (no workspace there)"


def test_existing_folder_named_like_a_typo_is_opened(tmp_path, monkeypatch):
    from hipwizard.tui.app import HipwizardApp

    opened = []
    monkeypatch.setattr(HipwizardApp, "run", lambda self, *a, **k: opened.append(True))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "statsu").mkdir()
    assert main(["statsu"]) == 0
    assert opened == [True]


# --- a stdout that cannot encode every character ----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("env", [
    {"PYTHONIOENCODING": "ascii"},
    {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": ""},
], ids=["PYTHONIOENCODING=ascii", "C-locale-no-utf8"])
def test_status_on_an_ascii_stdout_prints_instead_of_a_traceback(tmp_path, env):
    done = _run("status", str(tmp_path), **env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done
    rows = [line for line in done.stdout.splitlines() if "doctor" in line and "not started" in line]
    assert rows and "\\u25cb" in rows[0]  # the state symbol, written as an escape the terminal can show


def test_help_and_an_error_on_an_ascii_stdout(tmp_path):
    done = _run("--help", PYTHONIOENCODING="ascii")
    assert done.returncode == 0 and "--web" in done.stdout and "Traceback" not in done.stderr
    done = _run(str(tmp_path / "caf\u00e9-\u2014"), PYTHONIOENCODING="ascii")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "does not exist" in _one_error_line(done.stderr)


def test_an_argparse_error_quotes_the_arguments_inert(capsys):
    """argparse's own error line echoes what the user typed: an escape in it must not reach the terminal."""
    with pytest.raises(SystemExit) as stop:
        main(["doctor", "--bogus\x1b]0;pwned\x07\x1b]52;c;ZGF0YQ==\x1b\\\x9b2J"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --bogus" in err
    assert not any(c in err for c in "\x1b\x07\x9b")


def test_a_sub_command_usage_names_the_sub_command(capsys):
    with pytest.raises(SystemExit):
        main(["train", "plan"])
    err = capsys.readouterr().err
    assert "usage: hipwizard train plan [-h]" in err
    assert "hipwizard train plan: error:" in err
