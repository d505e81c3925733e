"""One way to name the workspace: every sub-command that uses a workspace takes ``--workspace DIR`` with the
same metavar and wording; ``status`` and ``report`` keep their older positional DIR."""

from __future__ import annotations

import json

import pytest

from hipwizard.cli import build_parser, main


def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _commands():
    for name, p in _subparsers(build_parser()):
        children = list(_subparsers(p))
        yield from ((f"{name} {child}", c) for child, c in children) if children else [(name, p)]


def test_every_workspace_option_is_spelled_one_way():
    seen = {}
    for name, p in _commands():
        for action in p._actions:
            if "--workspace" in action.option_strings:
                seen[name] = action
    assert {"doctor", "status", "report", "env", "parity compare", "parity capture", "hipify", "train plan",
            "train run"} <= set(seen)
    for name, action in seen.items():
        assert action.metavar == "DIR", name
        assert action.help.startswith("the workspace folder") and "(default: the current folder" in action.help, name


def test_status_and_report_take_the_option_and_the_older_positional(tmp_path, capsys):
    assert main(["status", "--workspace", str(tmp_path), "--json"]) == 0
    by_option = json.loads(capsys.readouterr().out)
    assert main(["status", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_option and by_option["workspace"] == str(tmp_path)
    assert main(["report", "--workspace", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").is_file()
    other = tmp_path / "other"
    other.mkdir()
    assert main(["status", str(other), "--workspace", str(tmp_path)]) == 2
    assert "named twice" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["status", "--workspace", "nowhere"], ["report", "--workspace", "nowhere"]])
def test_a_missing_workspace_is_one_line(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("hipwizard: error: ")
