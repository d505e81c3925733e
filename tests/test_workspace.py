import json

from hipwizard.cli import main
from hipwizard.workspace import Workspace


def test_state_roundtrip_carries_version(tmp_path):
    ws = Workspace(tmp_path)
    ws.update_state("port", src="a", out="b")
    raw = json.loads((tmp_path / ".hipwizard" / "port.json").read_text())
    assert raw["version"] == 1 and raw["src"] == "a"
    assert ws.read_state("port")["out"] == "b"


def test_damaged_state_is_reported_not_raised(tmp_path):
    ws = Workspace(tmp_path)
    ws.state_dir.mkdir()
    ws.state_path("doctor").write_bytes(b"\x00\xff garbage")
    st = ws.step_status("doctor")
    assert st.state == "attention" and "unreadable" in st.summary


def test_newer_state_version_is_refused(tmp_path):
    ws = Workspace(tmp_path)
    ws.state_dir.mkdir()
    ws.state_path("train").write_text(json.dumps({"version": 99}))
    assert "newer hipwizard" in ws.read_state("train")["_error"]


def test_status_cli_json(tmp_path, capsys):
    assert main(["status", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["steps"]) == {"doctor", "port", "parity", "train"}
    assert out["next"] == "doctor"


def test_cli_bad_directory_is_one_line_exit_2(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main([str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a directory" in err


def test_static_subcommand_list_matches_the_parser():
    from hipwizard.cli import SUBCOMMANDS, _subcommand_names, build_parser

    assert _subcommand_names(build_parser()) == set(SUBCOMMANDS)


def test_status_cli_lists_every_step_of_the_registry_in_order(tmp_path, capsys):
    from hipwizard.steps import STEPS

    assert main(["status", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"workspace {tmp_path.resolve()}"
    rows = lines[1:-1]
    assert [r.split()[1:3] for r in rows] == [[str(s.number), s.key] for s in STEPS]
    assert all("not started" in r for r in rows) and lines[-1] == "next: doctor"
