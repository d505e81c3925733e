"""Text from outside is inert in the doctor's output: a pasted GPU name or a paste's file name holding OSC 52,
OSC 0, DCS, APC, C1 CSI, bare ESC... reaches neither stdout nor stderr as a control sequence (real CLI)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hipwizard.cli import main
from tests.hostile_text import HOSTILE, assert_inert

ROCMINFO = Path(__file__).resolve().parent.parent / "fixtures" / "doctor" / "corpus" / "mi300x-4x-rocminfo-thamada.txt"


def _paste(tmp_path: Path, gpu_name: str, file_name: str = "paste.log") -> Path:
    body = re.sub(r"(Marketing Name:\s*)(.*)", lambda m: m.group(1) + gpu_name.replace("\\", "\\\\"),
                  ROCMINFO.read_text())
    path = tmp_path / file_name
    path.write_text("$ rocminfo\n" + body)
    return path


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_gpu_name_in_a_paste_prints_inert(name, tmp_path, capsys):
    paste = _paste(tmp_path, HOSTILE[name])
    assert main(["doctor", "--paste", str(paste), "--no-save", "--record", str(tmp_path / "rec")]) in (0, 1)
    out, err = capsys.readouterr()
    assert_inert(out + err)
    assert "GPU: 4 ×" in out
    assert main(["doctor", "--paste", str(paste), "--no-save", "--json"]) in (0, 1)
    data = json.loads(capsys.readouterr().out)
    assert_inert(json.dumps(data, ensure_ascii=False))


def test_a_hostile_paste_file_name_prints_inert(tmp_path, capsys):
    paste = _paste(tmp_path, "AMD Instinct MI300X", file_name="\x1b]0;pwned\x07x\x9b2J.log")
    assert main(["doctor", "--paste", str(paste), "--workspace", str(tmp_path)]) in (0, 1)
    out, err = capsys.readouterr()
    assert_inert(out + err)
    assert "paste of x.log" in out  # the CSI "\x9b2J" went whole


def test_a_paste_over_the_cap_is_cut_at_a_line_and_says_so_in_the_json(tmp_path, capsys, monkeypatch):
    import io

    from tests.adversarial.rows_text_safety import big_paste

    big_paste(tmp_path)
    raw = (tmp_path / "big.log").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw)))  # through stdin this time
    assert main(["doctor", "--paste", "-", "--no-save", "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert any("larger than 8 MiB" in n and "whole lines" in n for n in data["notes"])
    assert "larger than 8 MiB" in err
    assert not re.search(r"AMD Instinc\b", json.dumps(data))  # the cut line is left out whole, not a GPU name
