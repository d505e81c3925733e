"""Pasted terminal logs: split at prompts (any style) and known output starts, recognised by content, written
in the --record layout, replayed; --paste on the command line; bad pastes are one line, exit 2."""

from __future__ import annotations

import io
import json

from hipwizard.cli import main
from hipwizard.doctor.paste.recognise import parse_paste
from hipwizard.doctor.probe.replay import read_recording
from tests.doctor.conftest import ROCM


def _body(name: str) -> str:
    return read_recording(ROCM / name).result.stdout


def _mixed_log() -> str:
    return "\n".join([
        "root@mi300x-host:~# rocminfo", _body("rocminfo-8xMI300X-ROCm-ROCm-4021.txt"),
        "## rocm-smi", "```", _body("rocm-smi-concise-8xMI300X-ROCm-ROCm-4021.txt"), "```",
        "(venv) user@host:~/work$ python -m torch.utils.collect_env",
        _body("collect_env-MI300X-torch251-rocm62-vllm-14397-partial.txt"),
        "$ cat /opt/rocm/.info/version", "6.4.0-47",
        "$ hipconfig --version", "bash: hipconfig: command not found",
    ])


def test_prompts_of_every_style_split_and_content_names_each_part():
    result = parse_paste(_mixed_log())
    kinds = [(p.kind, p.status) for p in result.recognised]
    assert kinds == [("rocminfo", "ok"), ("rocm-smi", "ok"), ("collect_env", "ok"), ("rocm version file", "ok"),
                     ("hipconfig", "missing")]


def test_content_wins_over_a_wrong_prompt_and_no_prompt_still_splits():
    text = "$ rocm-smi\n" + _body("rocminfo-8xMI300X-ROCm-ROCm-4021.txt") + "\n" + \
        _body("rocm-smi-concise-8xMI300X-ROCm-ROCm-4021.txt")  # second output: no prompt at all
    result = parse_paste(text)
    assert [p.kind for p in result.recognised] == ["rocminfo", "rocm-smi"]
    assert "the prompt says 'rocm-smi'" in result.recognised[0].note


def test_a_bare_version_line_needs_its_prompt():
    assert parse_paste("6.4.0-47\n").recognised == []
    assert [p.kind for p in parse_paste("$ cat /opt/rocm/.info/version\n6.4.0-47\n").recognised] == ["rocm version file"]


def test_paste_cli_records_replays_and_flags_the_mismatches(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(_mixed_log()))
    folder = tmp_path / "ticket"
    rc = main(["doctor", "--paste", "-", "--record", str(folder), "--json", "--no-save"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["origin"] == "paste of stdin"
    assert (folder / "rocminfo.txt").is_file() and (folder / "collect_env.txt").is_file()
    assert read_recording(folder / "hipconfig_--version.txt").result.status == "missing"
    checks = {c["id"]: c for c in data["checks"]}
    assert checks["evidence"]["status"] == "warn"
    assert "built for ROCm 6.2 on a ROCm 6.4.0-47 host" in checks["evidence"]["found"]
    assert "amdgpu 6.8.5 ships with ROCm 6.2" in checks["evidence"]["found"]
    assert checks["deepspeed"]["status"] == "unknown" and "not recorded" in checks["deepspeed"]["found"]
    assert checks["toolchain"]["status"] == "warn"  # the paste shows hipconfig missing: a real finding
    # the folder replays to the same verdicts
    rc2 = main(["doctor", "--replay", str(folder), "--json", "--no-save"])
    again = json.loads(capsys.readouterr().out)
    assert rc2 == rc and again["summary"] == data["summary"]


def test_bad_pastes_are_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "prose.log").write_text("hello, my GPU does not work\nplease help\n")
    (tmp_path / "bin.log").write_bytes(b"\x00\x01" * 100)
    for name in ("empty.log", "prose.log", "bin.log", "missing.log"):
        assert main(["doctor", "--paste", str(tmp_path / name), "--no-save"]) == 2
    err = capsys.readouterr().err
    assert err.count("hipwizard: error:") == 4 and "Traceback" not in err
    assert "no tool output recognised" in err and "looks binary" in err


def test_a_folder_with_only_a_pasted_collect_env_replays(tmp_path, capsys):
    (tmp_path / "issue.txt").write_text(_body("collect_env-MI300X-torch251-rocm62-vllm-14397-partial.txt"))
    rc = main(["doctor", "--replay", str(tmp_path), "--json", "--no-save"])
    data = json.loads(capsys.readouterr().out)
    checks = {c["id"]: c for c in data["checks"]}
    assert rc == 0 and "MI300X" in checks["gpu"]["found"] and "gfx942" in checks["gpu"]["found"]
    assert checks["bf16"]["status"] == "ok"
    assert checks["rocm"]["status"] == "unknown" and "HIP 6.2" in checks["rocm"]["found"]


def test_without_any_gpu_tool_output_the_gpu_checks_are_unknown_not_no_gpu(tmp_path, capsys):
    """A paste of `amd-smi version` alone (a real public one) says nothing about the GPUs: every check that
    needs them is unknown (not recorded), never "no GPU on this machine"."""
    from pathlib import Path

    paste = Path(__file__).resolve().parent.parent / "fixtures" / "doctor" / "corpus" / \
        "mi300x-partitioned-amd-smi-version-mixed-k8s-157.txt"
    assert main(["doctor", "--paste", str(paste), "--workspace", str(tmp_path), "--json"]) in (0, 1)
    checks = {c["id"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    for cid in ("gpu", "driver", "arch", "partitions", "bf16", "torch_devices", "flash_attn"):
        assert checks[cid]["status"] == "unknown", (cid, checks[cid])
        assert "no GPU on this machine" not in checks[cid]["found"], cid
    assert checks["rocm"]["status"] == "ok"


def test_unseen_forms_are_recognised_by_their_content():
    from hipwizard.doctor.paste.recognise import identify

    assert identify("device,Card series,Card model\ncard0,Arcturus GL-XL [AMD Instinct MI100],0x0c34\n") == "rocm-smi"
    assert identify("GPU: 0\n    MEMORY_PARTITION:\n        CAPS: N/A\n        CURRENT: NPS1\n") == "amd-smi static"
    agent = ("  Name:                    gfx1100\n  Uuid:                    GPU-c7b68b8200000000\n"
             "  Marketing Name:          Radeon RX 7900 XTX\n  Device Type:             GPU\n")
    assert identify(agent) == "rocminfo"
    assert identify("  Device Type: GPU\n") == ""  # one key alone is not rocminfo


def test_two_pastes_in_the_same_second_keep_separate_recordings(tmp_path, monkeypatch):
    """The workspace folder is named by the second: a second paste then must not write into (and mix its
    outputs with) the first one's recording."""
    from hipwizard.doctor import services
    from hipwizard.workspace import Workspace

    monkeypatch.setattr("time.strftime", lambda fmt, *a: "doctor-paste-20261203-120000")
    ws = Workspace(tmp_path)
    first = services.paste_source("$ cat /opt/rocm/.info/version\n6.4.0-47\n", "a.log", None, ws).record_dir
    second = services.paste_source(_body("rocminfo-8xMI300X-ROCm-ROCm-4021.txt"), "b.log", None, ws).record_dir
    assert first != second and second.name == "doctor-paste-20261203-120000-2"
    assert not (first / "rocminfo.txt").exists() and (second / "rocminfo.txt").is_file()
    assert not any(second.glob("*rocm*version*"))
