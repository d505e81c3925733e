"""Text from outside is inert in ``parity compare``'s output: a capture whose device name, torch version or
module names hold terminal control sequences prints none of them (real CLI, text and JSON)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hipwizard.cli import main
from tests.hostile_text import HOSTILE, assert_inert
from tests.parity.parity_captures import layer_outputs, write_capture


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_device_name_prints_inert(name, tmp_path, capsys):
    out = layer_outputs()
    hostile_modules = {HOSTILE[name] + k: v for k, v in out.items()}
    a = write_capture(tmp_path / "a.safetensors", hostile_modules, device_name=HOSTILE[name])
    b = write_capture(tmp_path / "b.safetensors", {k: v + np.float32(1e-9) for k, v in hostile_modules.items()},
                      device_name=HOSTILE[name], torch=HOSTILE[name])
    assert main(["parity", "compare", str(a), str(b), "--workspace", str(tmp_path)]) == 0
    text, err = capsys.readouterr()
    assert_inert(text + err)
    assert "AMD" in text and "pass" in text
    assert main(["parity", "compare", str(a), str(b), "--no-save", "--json"]) == 0
    raw = capsys.readouterr().out
    assert_inert(raw)
    json.loads(raw)  # still one JSON document (its strings escaped by json.dumps)
