"""Issue 34, LLaMA-Factory's ``fp8``: with transformers 5 the key alone trains in bf16 (measured on an H100), so
the rules say so, hipwizard's launch makes it engage with bf16 off, and the advisor never varies it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hipwizard.train.calibration.corrections import Measurement
from hipwizard.train.config import llamafactory_info
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.config.yaml_io import parse_yaml, render_yaml
from hipwizard.train.planning.device import KNOWN_DEVICES, DeviceTarget, arch_has_fp8
from hipwizard.train.planning.knob_catalog import label_extras, not_offered
from hipwizard.train.planning.rules import FP8_BF16_WORDS, FP8_MEMORY_WORDS, RuleContext, check_config
from hipwizard.train.run.launcher import LaunchOptions, build_environment
from tests.train.test_knobs import CUDA, pick

FIXTURE = Path(__file__).parent.parent / "fixtures" / "train" / "h100_fp8_issue34.json"


def device(key: str) -> DeviceTarget:
    name, vram, arch = KNOWN_DEVICES[key]
    return DeviceTarget(name, vram, arch, f"device {key}")


def fp8_issues(config: TrainConfig, **ctx) -> list:
    context = RuleContext(**{"device": device("h100"), "precision_fixed_early": True, **ctx})
    return [i for i in check_config(config, context) if i.field in ("fp8", "bf16")]


def test_the_key_round_trips_and_is_no_longer_an_unknown_key():
    loaded = parse_yaml("fp8: true\nbf16: false\n")
    assert loaded.config.fp8 is True and "fp8" not in loaded.unknown_keys
    assert "fp8: true" in render_yaml(loaded.config.model_copy(update={"lora_rank": 16}), loaded.document)


def test_fp8_with_bf16_on_is_said_to_train_in_bf16_with_the_way_out():
    issues = fp8_issues(pick().model_copy(update={"fp8": True, "bf16": True}))
    assert [(i.field, i.severity) for i in issues] == [("fp8", "warning")]
    text = issues[0].message
    assert "the run trains in bf16, not FP8" in text and "turn bf16 off" in text and FP8_BF16_WORDS in text
    # a transformers that reads the variable late (4.x) needs no warning
    assert fp8_issues(pick().model_copy(update={"fp8": True, "bf16": True}), precision_fixed_early=False) == []


def test_fp8_with_bf16_off_engages_through_the_launch_and_says_its_memory_is_not_estimated():
    issues = fp8_issues(pick().model_copy(update={"fp8": True, "bf16": False}))
    assert [(i.field, i.severity) for i in issues] == [("fp8", "info")]  # not "runs in float32"
    assert "ACCELERATE_MIXED_PRECISION=fp8" in issues[0].message and FP8_MEMORY_WORDS in issues[0].message
    plain = fp8_issues(pick().model_copy(update={"bf16": False}))
    assert [(i.field, i.severity) for i in plain] == [("bf16", "info")]


@pytest.mark.parametrize(("update", "ctx", "words"), [
    ({"quantization_bit": 4}, {}, "refuses FP8 with a quantized base model"),
    ({}, {"torchao_installed": False}, "fp8 needs torchao"),
    ({}, {"device": device("a100")}, "has no FP8 matrix instructions"),
    ({}, {"device": device("mi250x")}, "has no FP8 matrix instructions"),
])
def test_what_llamafactory_or_the_hardware_refuses_is_an_error(update, ctx, words):
    issues = fp8_issues(pick().model_copy(update={"fp8": True, "bf16": False, **update}), **ctx)
    assert any(i.severity == "error" and words in i.message for i in issues), issues


def test_fp8_hardware_by_architecture():
    assert [arch_has_fp8(a) for a in ("sm_89", "sm_90", "sm_100", "gfx942", "gfx950", "gfx1201")] == [True] * 6
    assert [arch_has_fp8(a) for a in ("sm_80", "sm_86", "gfx90a", "gfx908", "gfx1100")] == [False] * 5
    assert arch_has_fp8("") is None and arch_has_fp8("npu") is None
    assert fp8_issues(pick().model_copy(update={"fp8": True, "bf16": False}), device=device("mi300x"))[0].severity \
        == "info"


def test_the_installed_transformers_hands_its_precision_to_accelerate(tmp_path, monkeypatch):
    assert llamafactory_info.precision_fixed_early() is True  # transformers 5.6, as pinned
    pkg = tmp_path / "transformers"
    pkg.mkdir()
    (pkg / "trainer.py").write_text("        self.accelerator = Accelerator(**args)\n")  # 4.x: nothing passed
    monkeypatch.setattr(llamafactory_info, "_package_dir", lambda name: pkg if name == "transformers" else None)
    assert llamafactory_info.precision_fixed_early() is False
    (pkg / "trainer.py").write_text('        args = {\n            "mixed_precision": self.args.mixed_precision,\n')
    assert llamafactory_info.precision_fixed_early() is True


@pytest.mark.parametrize(("config", "engaged"), [({"fp8": True, "bf16": False}, True), ({"fp8": True}, True),
                                                 ({"fp8": True, "bf16": True}, False),
                                                 ({"fp8": True, "fp16": True}, False), ({"bf16": False}, False)])
def test_the_launch_sets_the_precision_only_where_fp8_can_engage(tmp_path, config, engaged):
    env, _ = build_environment(config, LaunchOptions(), "cuda", {}, tmp_path)
    assert (env.get("ACCELERATE_MIXED_PRECISION") == "fp8") is engaged
    if engaged:  # the caller's own environment still has the last word
        env, _ = build_environment(config, LaunchOptions(extra_env={"ACCELERATE_MIXED_PRECISION": "no"}), "cuda",
                                   {}, tmp_path)
        assert env["ACCELERATE_MIXED_PRECISION"] == "no"


def test_the_advisor_never_varies_fp8_and_says_why():
    lines = not_offered(pick(), CUDA, [])
    assert any(line.startswith("fp8: never varied") and FP8_MEMORY_WORDS in line for line in lines)
    assert not any(line.startswith("fp8") for line in not_offered(pick().model_copy(update={"fp8": True}), CUDA, []))
    assert "FP8" in label_extras(pick().model_copy(update={"fp8": True}), set())
    # a calibration's measurement with FP8 is never read as one without; older ones read as without
    assert Measurement.from_dict({"label": "x", "knobs": {"zero_stage": None}, "ok": True, "step_s": 1.0}
                                 ).knobs["fp8"] is False


def test_the_words_carry_the_recorded_h100_runs():
    data = json.loads(FIXTURE.read_text())
    one = {r["name"]: r for r in data["call_1"]["runs"]}
    two = {r["name"]: r for r in data["call_2"]["runs"]}
    p, key_only = one["prev_pick"], one["fp8"]
    assert key_only["yaml_extra"] == {"fp8": True, "fp8_backend": "torchao"} and key_only["changes"]["zero_stage"] == 2
    assert any("enabled: False" in line for line in key_only["fp8_lines"])
    assert f"{key_only['median_step_s']:.3f} s a step vs {p['median_step_s']:.3f} s without it" in FP8_BF16_WORDS
    assert key_only["peak_gib"] == p["peak_gib"]
    assert max(abs(key_only["losses"][s] - p["losses"][s]) for s in p["losses"]) < 0.002
    assert "within 0.002 of it at every step" in FP8_BF16_WORDS
    for name in ("fp8_env_no_ds", "fp8_env"):  # the launch-environment FP8 engaged, then failed in its first step
        assert any("enabled: True" in line for line in two[name]["fp8_lines"]) and two[name]["steps"] == 0
        assert two[name]["peak_gib"] >= 79.0
    assert "OutOfMemoryError" in two["fp8_env_no_ds"]["error"]
    assert f"{two['prev_no_ds']['peak_gib']:.0f} GiB in bf16, ran out" in FP8_MEMORY_WORDS
    assert f"with ZeRO-2, {p['peak_gib']:.0f} GiB in bf16" in FP8_MEMORY_WORDS


TORCHAO = Path(sys.prefix) / "extras" / "torchao"  # ./run.sh setup installs it there, out of every other run's way


@pytest.mark.slow
@pytest.mark.skipif(not (TORCHAO / "torchao").is_dir(), reason="./run.sh setup installs torchao for this test")
def test_real_llamafactory_engages_fp8_only_through_hipwizards_launch(tmp_path, demo_assets):
    """Real llamafactory-cli on the tiny model (CPU), fp8 on and bf16 off, launched by hipwizard: Accelerate reports
    FP8 enabled (its AO backend) and the run finishes; the same run with the variable LLaMA-Factory sets too late
    (the launch's own overridden) reports it disabled."""
    from hipwizard.train.demo import demo_run_config
    from hipwizard.train.run.launcher import launch
    from hipwizard.train.run.manifest import read_exit
    from hipwizard.train.run.rundir import save_run_dir
    from tests.train.helpers import LF_ENV, wait_for

    config, document = demo_run_config(demo_assets.root)
    config = TrainConfig.model_validate({**config.model_dump(exclude_unset=True), "max_steps": 2, "bf16": False,
                                         "fp8": True})
    document["fp8_backend"] = "torchao"
    seen = {}
    for name, extra in (("launched", {}), ("late", {"ACCELERATE_MIXED_PRECISION": "no"})):
        run = save_run_dir(tmp_path / name, config, document).path
        launch(run, LaunchOptions(platform="cpu", extra_env={**LF_ENV, "PYTHONPATH": str(TORCHAO), **extra}))
        end = wait_for(lambda run=run: read_exit(run), timeout=240, poll=0.5)
        log = (run / "train.log").read_text(errors="replace")
        assert end.returncode == 0, log[-2000:]
        seen[name] = [line for line in log.splitlines() if "Accelerate FP8 status" in line]
    assert len(seen["launched"]) == 1 and "enabled: True, backend: FP8BackendType.AO" in seen["launched"][0]
    assert len(seen["late"]) == 1 and "enabled: False" in seen["late"][0]


def test_pure_bf16_is_never_varied_with_the_recorded_h100_numbers():
    runs = {r["name"]: r for r in json.loads(FIXTURE.read_text())["call_1"]["runs"]}
    line = next(line for line in not_offered(pick(), CUDA, []) if line.startswith("pure_bf16"))
    assert f"{runs['pure_bf16']['median_step_s']:.3f} s a step vs {runs['prev_pick']['median_step_s']:.3f} s" in line
    assert f"{runs['pure_bf16']['peak_gib'] - runs['prev_pick']['peak_gib']:.0f} GiB more" in line
