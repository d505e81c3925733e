"""When LLaMA-Factory fails, ``train run`` says why in one line first and names the log that holds the
traceback, instead of printing the traceback. LLaMA-Factory's real output (recorded rejections in
``tests/fixtures/llamafactory``) is replayed by a real process launched in its place."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from hipwizard.cli import main
from hipwizard.train.run import launcher

from ..train.helpers import launchable_values, script

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "llamafactory"


def _fail_with(log: str, extra: dict, tmp: Path, monkeypatch, capsys) -> tuple[int, list[str], Path]:
    fake = script(tmp, f"cat {shlex.quote(str(FIX / log))}\nexit 1\n")
    monkeypatch.setattr(launcher, "find_llamafactory_cli", lambda explicit=None: fake)
    cfg = tmp / "recipe" / "c.yaml"
    cfg.parent.mkdir()
    cfg.write_text(yaml.safe_dump({**launchable_values(tmp), **extra}))
    code = main(["train", "run", str(cfg), "--workspace", str(tmp / "ws"), "--platform", "cpu"])
    out = capsys.readouterr().out
    return code, out.splitlines(), tmp / "ws"


@pytest.mark.parametrize("log, extra, cause, field", [
    ("stdout-reject-bad_key-cpu.log", {"bogus_key": 3}, "bogus_key", "bogus_key"),
    ("stdout-reject-bad_bf16-cpu.log", {"bf16": True}, "Your setup doesn't support bf16/gpu", "bf16"),
])
def test_the_cause_comes_first_and_the_traceback_stays_in_the_log(log, extra, cause, field, tmp_path, monkeypatch,
                                                                 capsys):
    code, lines, ws = _fail_with(log, extra, tmp_path, monkeypatch, capsys)
    assert code == 1
    assert lines[0].startswith("launched ")
    after = lines[1:]
    # the first line after the launch is the cause, on one line; then the field to look at
    assert after[0].startswith("✖ failed: ") and cause in after[0], after
    assert any(line.startswith(f"  look at: {field} in ") for line in after), after
    # no frame of the traceback on the terminal, which stays short
    assert not any("Traceback" in line or 'File "' in line or "^^^" in line for line in after), after
    assert len(after) <= 6, after
    # the log file named holds the whole traceback
    named = [line.split(": ", 1)[1] for line in after if line.startswith("  traceback and full output: ")]
    assert len(named) == 1
    text = Path(named[0]).read_text()
    assert "Traceback (most recent call last)" in text and text.count('File "') >= 5
    assert Path(named[0]).is_relative_to(ws)  # in the run directory, not beside the user's config
    assert sorted(p.name for p in (tmp_path / "recipe").iterdir()) == ["c.yaml"]
