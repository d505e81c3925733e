"""Issue 34 item 2: each knob offered only once measured / installed / on its platform, with its calibration
family and its stated reason; the optimizer's validation; TunableOp through the launch environment on ROCm only."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from hipwizard.cli import main
from hipwizard.errors import UserError
from hipwizard.train.calibration.corrections import Calibration, Measurement, knobs_of
from hipwizard.train.config.launch_knobs import KNOBS_NAME, knob_environment, read_knobs
from hipwizard.train.config.train_config import TrainConfig, build_config
from hipwizard.train.config.yaml_io import load_yaml
from hipwizard.train.planning import knobs as knobs_module
from hipwizard.train.planning.advisor import advise
from hipwizard.train.planning.knob_catalog import default_optim, knob_trials, neutral_alternatives
from hipwizard.train.planning.knobs import KnobAvailability, fa2_build
from hipwizard.train.run.launcher import LaunchOptions, build_environment, launch
from hipwizard.train.run.manifest import read_exit
from hipwizard.train.run.rundir import save_run_dir
from hipwizard.train.services import plan_file
from tests.train.helpers import run_dir_with, script, wait_for
from tests.train.plan_fixtures import recipe_dir, recipe_values
from tests.train.test_advisor import SHAPE

VERSIONS = {"torch": "2.14.1+cu130"}  # adamw_torch_fused is transformers' default with this torch
CUDA = KnobAvailability(liger=True, fa2=True, compile=True, platform="cuda", versions=VERSIONS, unsloth=True,
                        fa2_build="CUDA")
ROCM = KnobAvailability(liger=True, fa2=True, compile=True, platform="rocm", versions=VERSIONS, fa2_build="CK")


def pick() -> TrainConfig:
    """The previous pick of issue 34: no DeepSpeed, no checkpointing, 16 x 1, Liger, bf16, SDPA."""
    return TrainConfig(**recipe_values(zero_stage=None, disable_gradient_checkpointing=True, flash_attn="sdpa",
                                       per_device_train_batch_size=16, gradient_accumulation_steps=1,
                                       enable_liger_kernel=True))


def measured(cfg: TrainConfig, step_s: float) -> Measurement:
    return Measurement("m", knobs_of(cfg), True, step_s=step_s, tokens_per_s=16 * 830 / step_s, peak_gib=60.0,
                       predicted_step_s=1.0, predicted_compute_s=0.9, predicted_peak_gib=60.0,
                       predicted_per_token_gib=30.0)


def plan(cfg: TrainConfig, knobs: KnobAvailability, cal: Calibration | None = None, **kw):
    return advise(cfg, SHAPE, vram_gib=139.8, seq_len=830, lengths="fixed", knobs=knobs, calibration=cal, **kw)


def changed(advice, field: str) -> list:
    return [c for c in advice.ranked if field in c.changes]


def test_neutral_knobs_are_never_advised_unmeasured_and_the_advice_says_so():
    advice = plan(pick(), CUDA)
    for f in ("optim", "dataloader_num_workers", "torch_compile", "use_unsloth", "flash_attn"):
        assert changed(advice, f) == [], f
    lines = advice.not_offered
    assert lines and any(line.startswith("optim adamw_torch: predicted neutral, not yet timed") for line in lines)
    assert any(line.startswith("dataloader_num_workers 4:") for line in lines)
    assert any(line.startswith("flash_attn fa2 (CUDA build):") for line in lines)
    # Liger + torch.compile is known-bad: a calibration with knobs does not even try it on top of Liger
    assert any(c.torch_compile for c in knob_trials(pick(), CUDA))
    trials = plan(pick(), CUDA, trials=True).trials
    assert trials and not any(t.config.torch_compile and t.config.enable_liger_kernel for t in trials)


def test_a_measured_knob_is_advised_with_its_reason_and_a_slower_one_is_not():
    base = pick()
    foreach = base.model_copy(update={"optim": "adamw_torch"})
    workers = base.model_copy(update={"dataloader_num_workers": 4})
    cal = Calibration(key={}, measurements=[measured(base, 1.00), measured(foreach, 0.95), measured(workers, 1.05)])
    advice = plan(base, CUDA, cal)
    optim = changed(advice, "optim")
    assert [c.config.optim for c in optim] == ["adamw_torch"] and optim[0].source == "measured"
    reason = " ".join(optim[0].reasons)
    assert "LoRA updates only" in reason and "M parameters" in reason and "tiny share" in reason
    assert "measured here" in reason
    assert changed(advice, "dataloader_num_workers") == []  # measured, and slower than the user's: not advice
    assert not any(line.startswith("optim adamw_torch:") for line in advice.not_offered)


def test_a_measurement_of_one_setting_is_never_another_settings():
    base = pick()
    foreach = base.model_copy(update={"optim": "adamw_torch"})
    cal = Calibration(key={}, measurements=[measured(foreach, 0.5)])
    assert cal.find(base) is None and cal.find(foreach) is not None
    for other in (base, foreach.model_copy(update={"dataloader_num_workers": 4}),
                  foreach.model_copy(update={"tunableop": True}), foreach.model_copy(update={"use_unsloth": True})):
        got = cal.apply(other, advise(other, SHAPE, vram_gib=139.8, seq_len=830).baseline.throughput,
                        advise(other, SHAPE, vram_gib=139.8, seq_len=830).baseline.estimate, tokens_per_step=16 * 830)
        assert got.source == "calibrated" and got.borrowed, other
    # its own family (only the batch split differs) is calibrated from it, not borrowed
    split = foreach.model_copy(update={"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2})
    base_plan = advise(split, SHAPE, vram_gib=139.8, seq_len=830).baseline
    got = cal.apply(split, base_plan.throughput, base_plan.estimate, tokens_per_step=16 * 830)
    assert got.source == "calibrated" and not got.borrowed
    # only the values a calibration holds are tried
    assert neutral_alternatives(base, CUDA, [m.knobs for m in cal.measurements])["optim"] == ["adamw_torch"]
    assert neutral_alternatives(base, CUDA, [m.knobs for m in cal.measurements])["dataloader_num_workers"] == []


def test_older_calibrations_read_the_new_knobs_as_their_defaults():
    old = {"label": "x", "knobs": {"zero_stage": None, "flash_attn": "sdpa"}, "ok": True, "step_s": 1.0}
    m = Measurement.from_dict(old)
    assert m.knobs["optim"] is None and m.knobs["dataloader_num_workers"] == 0 and m.knobs["tunableop"] is False


def test_fa2_is_offered_only_installed_and_measured_and_names_its_rocm_build():
    base = pick()
    fa2 = base.model_copy(update={"flash_attn": "fa2"})
    cal = Calibration(key={}, measurements=[measured(base, 1.0), measured(fa2, 0.9)])
    assert changed(plan(base, replace(ROCM, fa2=False, fa2_build=""), cal), "flash_attn") == []
    assert any("flash-attn is not installed" in line
               for line in plan(base, replace(ROCM, fa2=False, fa2_build="")).not_offered)
    offered = changed(plan(base, ROCM, cal), "flash_attn")
    assert offered and "the ROCm Composable Kernel build" in " ".join(offered[0].reasons)
    triton = changed(plan(base, replace(ROCM, fa2_build="Triton"), cal), "flash_attn")
    assert triton and "the ROCm Triton build" in " ".join(triton[0].reasons)


def test_fa2_build_follows_flash_attn_interface(monkeypatch):
    present = {"flash_attn", "flash_attn_2_cuda"}
    monkeypatch.setattr(knobs_module, "_found", lambda mod: mod in present)
    assert fa2_build("rocm", {}) == "CK"
    assert fa2_build("rocm", {"FLASH_ATTENTION_TRITON_AMD_ENABLE": "TRUE"}) == "Triton"
    assert fa2_build("cuda", {}) == "CUDA"
    present.discard("flash_attn_2_cuda")  # no compiled CK kernels: the interface falls back to Triton
    assert fa2_build("rocm", {}) == "Triton"
    present.clear()
    assert fa2_build("rocm", {}) == ""


def test_platform_knobs_tunableop_on_rocm_unsloth_on_nvidia_only():
    base = pick().model_copy(update={"disable_gradient_checkpointing": False})
    on_rocm = {f for t in knob_trials(base, ROCM) for f in ("tunableop", "use_unsloth") if getattr(t, f)}
    on_cuda = {f for t in knob_trials(base, CUDA) for f in ("tunableop", "use_unsloth") if getattr(t, f)}
    assert on_rocm == {"tunableop"} and on_cuda == {"use_unsloth"}
    assert any(t.use_unsloth_gc for t in knob_trials(base, CUDA))  # checkpointing on: Unsloth's checkpointing too
    assert not any(t.use_unsloth_gc for t in knob_trials(pick(), CUDA))  # off: nothing for it to act on
    cuda_lines, rocm_lines = plan(base, CUDA).not_offered, plan(base, ROCM).not_offered
    assert any(line.startswith("TunableOp: ROCm only") and "+0.2%" in line for line in cuda_lines)
    assert any(line == "use_unsloth: Unsloth's kernels are NVIDIA-only" for line in rocm_lines)
    no_unsloth = plan(base, replace(CUDA, unsloth=False)).not_offered
    assert any("unsloth package is not installed" in line for line in no_unsloth)
    for lines in (cuda_lines, rocm_lines):
        assert any(line.startswith("use_v1_kernels:") for line in lines)
        assert any(line.startswith("use_dora, use_rslora") for line in lines)
    tuned = base.model_copy(update={"tunableop": True})
    cal = Calibration(key={}, measurements=[measured(base, 1.0), measured(tuned, 0.9)])
    advised = changed(plan(base, ROCM, cal), "tunableop")
    assert advised and "one-time cost in start-up" in " ".join(advised[0].reasons)
    assert "tunableop_results<GPU>.csv" in " ".join(advised[0].reasons)
    assert changed(plan(base, CUDA, cal), "tunableop") == []  # measured or not, never on CUDA


def test_the_default_optimizer_follows_transformers():
    assert default_optim({"torch": "2.14.1+cu130"}) == "adamw_torch_fused"
    assert default_optim({"torch": "2.7.1"}) == "adamw_torch"
    foreach = pick().model_copy(update={"optim": "adamw_torch"})
    assert neutral_alternatives(foreach, CUDA, [{"optim": "adamw_torch_fused"}])["optim"] == ["adamw_torch_fused"]
    adafactor = pick().model_copy(update={"optim": "adafactor"})  # another optimizer's maths: never varied
    assert neutral_alternatives(adafactor, CUDA, [{"optim": "adamw_torch"}])["optim"] == []


def test_a_bad_optimizer_is_one_line_naming_the_field(tmp_path, capsys):
    config, errors = build_config({"optim": "adam_fast", "lora_rank": 4})
    assert [f for f, _ in errors] == ["optim"] and config.optim is None and config.lora_rank == 4
    assert errors[0][1].startswith("optim: not an optimizer the HF Trainer knows") and "adam_fast" in errors[0][1]
    base = recipe_dir(tmp_path)
    (base / "bad.yaml").write_text((base / "recipe.yaml").read_text() + "optim: adam_fast\n")
    with pytest.raises(UserError, match="optim: not an optimizer"):
        plan_file(base / "bad.yaml")
    code = main(["train", "plan", str(base / "bad.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "optim: not an optimizer" in err


def test_tunableop_lives_beside_the_yaml_and_reaches_the_launch_env_on_rocm_only(tmp_path):
    cfg = TrainConfig(**recipe_values(tunableop=True))
    run = save_run_dir(tmp_path / "r", cfg)
    assert "tunableop" not in run.config_path.read_text()  # LLaMA-Factory refuses keys it does not know
    assert json.loads((run.path / KNOBS_NAME).read_text()) == {"written_by": "hipwizard", "tunableop": True}
    assert load_yaml(run.config_path).config.tunableop is True
    knobs = read_knobs(run.path)
    env, _ = build_environment({}, LaunchOptions(), "rocm", {}, tmp_path, knob_environment(knobs, "rocm", run.path))
    assert env["PYTORCH_TUNABLEOP_ENABLED"] == "1" and env["PYTORCH_TUNABLEOP_TUNING"] == "1"
    assert env["PYTORCH_TUNABLEOP_FILENAME"] == str(run.path / "tunableop_results%d.csv")
    for platform in ("cuda", "cpu"):
        env, _ = build_environment({}, LaunchOptions(), platform, {}, tmp_path,
                                   knob_environment(knobs, platform, run.path))
        assert not any(k.startswith("PYTORCH_TUNABLEOP") for k in env), platform
    save_run_dir(run.path, cfg.model_copy(update={"tunableop": False}))
    assert not (run.path / KNOBS_NAME).exists() and load_yaml(run.config_path).config.tunableop is False


def test_a_knobs_file_hipwizard_did_not_write_is_not_read(tmp_path):
    (tmp_path / KNOBS_NAME).write_text(json.dumps({"tunableop": True}))
    assert read_knobs(tmp_path) == {}
    (tmp_path / KNOBS_NAME).write_text("[1, 2")
    assert read_knobs(tmp_path) == {}


def test_a_launched_run_gets_tunableop_on_rocm_and_never_on_cuda(tmp_path):
    cli = script(tmp_path, 'echo "$PYTORCH_TUNABLEOP_ENABLED $PYTORCH_TUNABLEOP_FILENAME" > seen.txt\n')
    for platform in ("rocm", "cuda"):
        d = run_dir_with(tmp_path, name=platform)
        (d / KNOBS_NAME).write_text(json.dumps({"written_by": "hipwizard", "tunableop": True}))
        m = launch(d, LaunchOptions(platform=platform, llamafactory_cli=cli))
        wait_for(lambda d=d: read_exit(d), 30)
        seen = (d / "seen.txt").read_text().split()
        if platform == "rocm":
            assert seen == ["1", str(d.resolve() / "tunableop_results%d.csv")]
            assert m.env_delta["PYTORCH_TUNABLEOP_TUNING"] == "1"
        else:
            assert seen == [] and not any(k.startswith("PYTORCH_TUNABLEOP") for k in m.env_delta)
