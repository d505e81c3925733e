"""The estimator against measured peaks (issue 6, one H200) and its behaviour on every knob."""

import json
import math
import struct

import pytest

from hipwizard.train.config import TrainConfig
from hipwizard.train.memory import estimate_memory
from hipwizard.train.model_shape import load_shape
from tests.train.plan_fixtures import FIXTURES, recipe_values

# (config changes, measured peak GiB): bare llamafactory-cli, Llama-3-8B shape, LoRA q_proj,v_proj,
# 16 sequences of ~830 tokens per optimizer step, bf16, SDPA.
H200_RUNS = [
    (dict(zero_stage=3), 24.0),
    (dict(zero_stage=None), 28.1),
    (dict(zero_stage=None, disable_gradient_checkpointing=True), 44.6),
    (dict(zero_stage=None, disable_gradient_checkpointing=True, per_device_train_batch_size=8, gradient_accumulation_steps=2), 63.0),
    (dict(zero_stage=None, disable_gradient_checkpointing=True, per_device_train_batch_size=16, gradient_accumulation_steps=1), 109.9),
]
SHAPE = load_shape("m8b", FIXTURES)


def estimate(seq_len=830, world_size=1, **changes):
    return estimate_memory(TrainConfig(**recipe_values(**changes)), SHAPE, seq_len=seq_len, world_size=world_size,
                           device_vram_gib=140.4)


@pytest.mark.parametrize("changes, measured", H200_RUNS)
def test_h200_peaks_within_ten_percent(changes, measured):
    predicted = estimate(**changes).total_gib
    assert abs(predicted - measured) / measured <= 0.10, (predicted, measured)


@pytest.mark.parametrize("log, changes", [("plain", dict(zero_stage=None)), ("zero3", dict(zero_stage=3))])
def test_tensor_memory_matches_recorded_max_memory_allocated(log, changes):
    # Our own check: RECORD_VRAM's vram_allocated (torch max_memory_allocated) in the real trainer logs
    # must match the tensor parts of the estimate (weights, states, activations, logits).
    rows = [json.loads(line) for line in (FIXTURES.parent / "llamafactory" / f"trainer_log-8b-lora-{log}-h200.jsonl").open()]
    measured = max(r["vram_allocated"] for r in rows)
    tensors = sum(p.gib for p in estimate(**changes).parts if p.name not in ("allocator slack", "runtime context"))
    assert abs(tensors - measured) / measured <= 0.10, (tensors, measured)


def test_breakdown_margin_and_fit():
    est = estimate()
    names = [p.name for p in est.parts]
    assert names[:3] == ["weights", "gradients", "optimizer states"] and "activations" in names
    assert math.isclose(est.total_gib, sum(p.gib for p in est.parts))
    assert est.fits and math.isclose(est.margin_gib, 140.4 - est.total_gib)
    small = estimate_memory(TrainConfig(**recipe_values()), SHAPE, seq_len=830, device_vram_gib=16)
    assert small.fits is False and small.margin_gib < 0


def test_knobs_move_memory_the_right_way():
    base = estimate(zero_stage=None).total_gib
    assert estimate(zero_stage=None, disable_gradient_checkpointing=True).total_gib > base
    assert estimate(zero_stage=None, per_device_train_batch_size=8).total_gib > base
    assert estimate(zero_stage=None, seq_len=1024).total_gib > base
    assert estimate(zero_stage=None, flash_attn="disabled", seq_len=1024).total_gib > estimate(zero_stage=None, seq_len=1024).total_gib
    assert estimate(zero_stage=None, quantization_bit=4).total_gib < base - 8
    assert estimate(zero_stage=None, bf16=False).total_gib > base + 10  # fp32 weights and activations
    assert estimate(zero_stage=None, lora_dropout=0.1).total_gib > base
    assert estimate(zero_stage=None, lora_target="all", lora_rank=64).total_gib > base


def test_zero_sharding_and_offload_for_full_fine_tuning():
    full1 = estimate(finetuning_type="full", zero_stage=None)
    assert full1.total_gib > 16 * 8.03e9 / 2**30  # weights+grads+Adam, 16 bytes a parameter
    z2 = estimate(finetuning_type="full", zero_stage=2, world_size=8)
    z3 = estimate(finetuning_type="full", zero_stage=3, world_size=8)
    z3off = estimate(finetuning_type="full", zero_stage=3, world_size=8, offload_optimizer=True, offload_param=True)
    assert full1.total_gib > z2.total_gib > z3.total_gib > z3off.total_gib
    assert z3off.host_gib > 10 and any("host RAM" in n for n in z3off.notes)
    by = {p.name: p.gib for p in z3.parts}
    assert by["optimizer states"] == pytest.approx(12 * 8.03e9 / 8 / 2**30, rel=0.01)


def test_seq_len_defaults_to_cutoff_and_is_capped_by_it():
    est = estimate_memory(TrainConfig(**recipe_values()), SHAPE)
    assert est.seq_len == 1024 and any("cutoff_len" in n for n in est.notes)
    assert estimate(seq_len=5000).seq_len == 1024


def test_unknown_architecture_and_missing_config_say_why(tmp_path):
    cfg = TrainConfig(**recipe_values())
    est = estimate_memory(cfg, load_shape("unknown_arch", FIXTURES))
    assert not est.available and "MambaForCausalLM" in est.reason and est.fits is None
    (tmp_path / "m").mkdir()
    assert "no config.json" in estimate_memory(cfg, load_shape(str(tmp_path / "m"))).reason
    assert "does not exist" in estimate_memory(cfg, load_shape("/no/such/model")).reason
    assert estimate_memory(cfg, load_shape("meta-llama/Meta-Llama-3-8B-Instruct")).available  # shipped shape


def _safetensors_numel(path):
    with open(path, "rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
    return sum(math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__")


def test_parameter_count_of_the_real_demo_model(demo_assets):
    shape = load_shape(str(demo_assets.model_dir)).shape
    real = sum(_safetensors_numel(p) for p in demo_assets.model_dir.glob("*.safetensors"))
    assert shape.total_params == real
