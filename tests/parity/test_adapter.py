"""Parity with a LoRA adapter on top of the model (``--adapter``), as a post-mortem runs a run's checkpoint: real
peft on the demo's tiny Llama; the adapter is part of the model's identity, so a reference captured with one
adapter is never compared with another (or none); and which checkpoint a post-mortem of step N loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hipwizard.cli import main
from hipwizard.parity.postmortem import step_weights


def _adapter(model_dir: Path, out: Path, seed: int) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir),
                           LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    model.save_pretrained(out)
    return out


@pytest.mark.slow
def test_adapter_runs_unmerged_and_is_part_of_the_models_identity(demo_assets, tmp_path, capsys):
    model = demo_assets.model_dir
    a, b = _adapter(model, tmp_path / "a", 1), _adapter(model, tmp_path / "b", 2)
    ref = tmp_path / "ref.safetensors"
    common = ["--device", "cpu", "--seq", "8", "--backward"]
    assert main(["parity", "capture", "--model", str(model), "--adapter", str(a), "--dtype", "fp64", *common,
                 "--out", str(ref), "--json"]) == 0
    capsys.readouterr()
    rc = main(["parity", "compare", str(ref), "--model", str(model), "--adapter", str(a), "--dtype", "fp32",
               "--device", "cpu", "--no-save", "--json"])
    comp = json.loads(capsys.readouterr().out)
    assert rc == 0 and comp["verdict"] == "pass"
    grads = [layer["name"] for layer in comp["backward"]["layers"]]
    assert any(".lora_A." in n for n in grads) and any(".lora_B." in n for n in grads)  # the adapter's own ∂W
    assert any(layer["name"].endswith("model.norm") for layer in comp["layers"])  # found under PEFT's wrapping
    # the wrong adapter, none, or one where the reference had none: one line each, exit 2
    for extra, says in ((["--adapter", str(b)], "is not the adapter the reference was captured with"),
                        ([], "captured with the adapter 'a' on top of the model: pass it with --adapter")):
        rc = main(["parity", "compare", str(ref), "--model", str(model), *extra, "--device", "cpu", "--no-save"])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and says in err[0], err
    assert main(["parity", "capture", "--adapter", str(a), "--demo", "--out", str(tmp_path / "x.safetensors")]) == 2
    assert main(["parity", "capture", "--model", str(model), "--adapter", str(tmp_path),
                 "--out", str(tmp_path / "x.safetensors"), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--adapter goes with --model" in err[0] and "not a PEFT adapter folder" in err[1], err
    assert not (tmp_path / "x.safetensors").exists()


def _checkpoint(out: Path, k: int, kind: str) -> None:
    folder = out / f"checkpoint-{k}"
    folder.mkdir(parents=True)
    if kind == "lora":
        (folder / "adapter_config.json").write_text("{}")
    else:
        (folder / "config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(b"")


def test_a_postmortem_loads_the_newest_checkpoint_before_the_step(tmp_path):
    run, model = tmp_path / "run", tmp_path / "base"
    for k in (2, 4, 6):
        _checkpoint(run / "out", k, "lora")
    (run / "out" / "checkpoint-final").mkdir()  # not a step: ignored
    config = {"output_dir": "out"}
    five = step_weights(run, config, model, 5)  # step 5 trained with the weights after step 4
    assert five.adapter == run / "out" / "checkpoint-4" and five.model == model and five.checkpoint_step == 4
    assert "exactly the weights it trained with" in five.line
    four = step_weights(run, config, model, 4)
    assert four.checkpoint_step == 2 and "1 step(s) before" in four.line
    assert step_weights(run, config, model, 1).adapter is None
    none = step_weights(run, {"output_dir": "elsewhere"}, model, 5)
    assert none.adapter is None and none.model == model and "not on disk" in none.line
    _checkpoint(run / "full", 3, "full")  # full fine-tuning: the checkpoint is the model
    full = step_weights(run, {"output_dir": str(run / "full")}, model, 4)
    assert full.model == run / "full" / "checkpoint-3" and full.adapter is None
