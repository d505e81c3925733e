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
    saved = ws.state_file("train")
    assert "newer hipwizard" in saved.error and saved.data == {}
    assert ws.step_status("train").state == "attention"


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


def test_wrong_field_types_are_named_and_left_out_through_the_owner(tmp_path):
    """A field of the wrong type never reaches a reader: the step's state module registers its fields, the
    workspace drops the bad one and says which (``StateFile.error``), and the step shows "attention"."""
    from hipwizard.parity import state as parity_state

    ws = Workspace(tmp_path)
    ws.state_dir.mkdir()
    ws.state_path("parity").write_text(json.dumps({"version": 1, "comparisons": "not a list", "demo": True}))
    saved = ws.state_file("parity")
    assert "comparisons (str)" in saved.error and saved.data == {"version": 1, "demo": True}
    assert parity_state.comparisons(ws) == [] and parity_state.is_demo(ws)
    st = ws.step_status("parity")
    assert st.state == "attention" and "comparisons (str)" in st.summary
    parity_state.mark_demo(ws)  # already marked: nothing written
    parity_state.record_curves(ws, "/a", "/b", 0.3, 0.05)  # a write keeps the damaged file beside
    assert (ws.state_dir / "parity.json.damaged").is_file() and ws.state_file("parity").error == ""


def test_workspace_module_imports_no_step():
    import ast

    import hipwizard.workspace as module

    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    steps = {"hipwizard.doctor", "hipwizard.port", "hipwizard.parity", "hipwizard.train"}
    assert imported and not [m for m in imported if m in steps or m.startswith(tuple(f"{s}." for s in steps))]
    assert "importlib" not in imported
