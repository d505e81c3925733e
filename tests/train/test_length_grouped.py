"""Issue 34 item 2, sequence-length bucketing: ``group_by_length`` (the HF Trainer's length-grouped sampler) read
from either key transformers has used, written as the installed one takes, offered only once measured on unpacked
data, and calibrated in real tokens."""

from __future__ import annotations

import pytest

from hipwizard.train.calibration.corrections import Calibration, Measurement
from hipwizard.train.calibration.measure import counting_real_tokens
from hipwizard.train.config import llamafactory_info, yaml_io
from hipwizard.train.config.llamafactory_info import SAMPLER_KEY_NEW, SAMPLER_KEY_OLD
from hipwizard.train.config.yaml_io import parse_yaml, render_yaml
from hipwizard.train.planning.advisor import advise
from hipwizard.train.planning.knob_catalog import knob_reasons, knob_trials, knob_variants
from tests.train.test_advisor import SHAPE
from tests.train.test_knobs import CUDA, changed, measured, pick, plan


def vplan(cfg, knobs, cal=None, **kw):
    """``test_knobs.plan`` on variable-length samples (what grouping acts on)."""
    return advise(cfg, SHAPE, vram_gib=139.8, seq_len=830, lengths="variable", knobs=knobs, calibration=cal, **kw)

# The field lines as transformers writes them: 5.6's TrainingArguments and 4.57's.
NEW_ARGS = '''    train_sampling_strategy: str = field(
        default="random",
'''
OLD_ARGS = '''    group_by_length: bool = field(
        default=False,
'''


@pytest.mark.parametrize(("text", "key"), [(NEW_ARGS, SAMPLER_KEY_NEW), (OLD_ARGS, SAMPLER_KEY_OLD),
                                           ("class TrainingArguments:\n    seed: int = 42\n", None)])
def test_the_sampler_key_is_read_from_the_installed_training_args(tmp_path, monkeypatch, text, key):
    pkg = tmp_path / "transformers"
    pkg.mkdir()
    (pkg / "training_args.py").write_text("@dataclass\nclass TrainingArguments:\n" + text)
    monkeypatch.setattr(llamafactory_info, "_package_dir", lambda name: pkg if name == "transformers" else None)
    assert llamafactory_info.sampler_key() == key


def test_the_installed_transformers_names_its_key():
    # the pinned transformers (5.6) dropped the boolean for train_sampling_strategy
    assert llamafactory_info.sampler_key() == SAMPLER_KEY_NEW


@pytest.mark.parametrize("text", ["train_sampling_strategy: group_by_length\n", "group_by_length: true\n"])
def test_either_spelling_reads_as_grouped_and_is_not_an_unknown_key(text):
    loaded = parse_yaml("lora_rank: 8\n" + text)
    assert loaded.config.group_by_length is True
    assert loaded.unknown_keys == []


@pytest.mark.parametrize(("installed", "text", "want"), [
    # the installed key wins; the spelling it would refuse is replaced
    (SAMPLER_KEY_NEW, "group_by_length: true\n", "train_sampling_strategy: group_by_length\n"),
    (SAMPLER_KEY_OLD, "train_sampling_strategy: group_by_length\n", "group_by_length: true\n"),
    (SAMPLER_KEY_NEW, "train_sampling_strategy: group_by_length\n", "train_sampling_strategy: group_by_length\n"),
])
def test_a_grouped_config_is_written_under_the_key_the_installed_transformers_takes(monkeypatch, installed, text,
                                                                                    want):
    monkeypatch.setattr(yaml_io, "sampler_key", lambda: installed)
    loaded = parse_yaml("lora_rank: 8\n" + text)
    assert render_yaml(loaded.config, loaded.document) == "lora_rank: 8\n" + want


@pytest.mark.parametrize("installed", [SAMPLER_KEY_NEW, SAMPLER_KEY_OLD, None])
def test_turning_grouping_on_and_off_round_trips(monkeypatch, installed):
    monkeypatch.setattr(yaml_io, "sampler_key", lambda: installed)
    loaded = parse_yaml("lora_rank: 8\n")
    on = render_yaml(loaded.config.model_copy(update={"group_by_length": True}), loaded.document)
    assert (SAMPLER_KEY_OLD + ": true" if installed == SAMPLER_KEY_OLD else
            SAMPLER_KEY_NEW + ": group_by_length") in on
    back = parse_yaml(on)
    assert back.config.group_by_length is True
    off = render_yaml(back.config.model_copy(update={"group_by_length": False}), back.document)
    assert parse_yaml(off).config.group_by_length is False and "lora_rank: 8" in off
    assert SAMPLER_KEY_NEW not in off  # no strategy left behind that the user did not write


def test_another_sampling_strategy_the_user_set_stays_when_grouping_stays_off(monkeypatch):
    monkeypatch.setattr(yaml_io, "sampler_key", lambda: SAMPLER_KEY_NEW)
    loaded = parse_yaml("train_sampling_strategy: sequential\n")
    assert loaded.config.group_by_length is False and loaded.unknown_keys == [SAMPLER_KEY_NEW]
    edited = loaded.config.model_copy(update={"group_by_length": False, "lora_rank": 16})
    assert "train_sampling_strategy: sequential" in render_yaml(edited, loaded.document)


def test_grouping_is_tried_on_unpacked_sft_only_and_never_with_packing():
    base = pick()
    assert any(c.group_by_length for c in knob_trials(base, CUDA))
    assert not any(c.group_by_length for c in knob_trials(base.model_copy(update={"packing": True}), CUDA))
    assert not any(c.group_by_length for c in knob_trials(base.model_copy(update={"stage": "pt"}), CUDA))
    axes = {"packing": [None, True], "group_by_length": [False, True]}
    assert {(u["packing"], u["group_by_length"]) for u in knob_variants(base, axes)} == {
        (None, False), (None, True), (True, False)}


def test_grouping_is_advised_only_once_measured_faster_with_its_reason():
    base = pick()
    grouped = base.model_copy(update={"group_by_length": True})
    assert changed(vplan(base, CUDA), "group_by_length") == []
    assert any(line.startswith("group_by_length on: predicted neutral, not yet timed")
               for line in vplan(base, CUDA).not_offered)
    advice = vplan(base, CUDA, Calibration(key={}, measurements=[measured(base, 1.0), measured(grouped, 0.6)]))
    got = changed(advice, "group_by_length")
    assert got and got[0].source == "measured" and advice.best is got[0]
    assert "length-grouped" in got[0].label
    reason = " ".join(got[0].reasons)
    assert "same samples per step" in reason and "falling length" in reason and "measured here" in reason
    slower = vplan(base, CUDA, Calibration(key={}, measurements=[measured(base, 1.0), measured(grouped, 1.1)]))
    assert changed(slower, "group_by_length") == []
    # one setting's measurement is never the other's
    assert Calibration(key={}, measurements=[measured(grouped, 0.6)]).find(base) is None


def test_the_reason_carries_the_recorded_h100_numbers():
    import json
    from pathlib import Path

    runs = {r["name"]: r for r in json.loads((Path(__file__).parent.parent / "fixtures" / "train" /
                                              "h100_bucketing_issue34.json").read_text())["runs"]}
    random_order, grouped = runs["unpacked_var"]["real_tokens_per_s"], runs["bucketed_var"]["real_tokens_per_s"]
    line = " ".join(knob_reasons(pick(), pick().model_copy(update={"group_by_length": True}), CUDA, None))
    assert f"{random_order / 1000:.1f}k real tokens/s in random order" in line
    assert f"{grouped / 1000:.1f}k length-grouped, {grouped / random_order:.2f}x" in line
    assert "1.61 tokens per real token" in line


def test_calibration_counts_real_tokens_unless_the_user_counts_otherwise():
    assert counting_real_tokens(parse_yaml("lora_rank: 8\n").document)["include_num_input_tokens_seen"] == \
        "non_padding"
    user = parse_yaml("include_num_input_tokens_seen: true\n").document
    assert counting_real_tokens(user)["include_num_input_tokens_seen"] is True
    assert "include_num_input_tokens_seen" not in parse_yaml("lora_rank: 8\n").document  # the user's is untouched
    assert counting_real_tokens(None)["include_num_input_tokens_seen"] == "non_padding"


def test_older_calibrations_read_grouping_as_off():
    m = Measurement.from_dict({"label": "x", "knobs": {"zero_stage": None}, "ok": True, "step_s": 1.0})
    assert m.knobs["group_by_length"] is False


@pytest.mark.slow
def test_real_llamafactory_takes_the_written_key_and_groups_the_batches(tmp_path, demo_assets):
    """Real llamafactory-cli on the tiny model (CPU), the YAML written by hipwizard with grouping on: it starts
    (the key is one the installed transformers takes) and its batches come in runs of falling length: 48 samples
    at 4 a step make 4 runs of 3 batches (transformers: min(50, a quarter of the epoch's batches) per run), each
    batch no longer than the one before it in its run (the trainer's padded count per step). In random order,
    48 samples of 8 lengths would almost never fall so in all four runs."""
    import json
    import random

    from hipwizard.train.config.train_config import TrainConfig
    from hipwizard.train.demo import demo_run_config
    from hipwizard.train.run.launcher import LaunchOptions, launch
    from hipwizard.train.run.manifest import read_exit
    from hipwizard.train.run.rundir import save_run_dir
    from tests.train.helpers import LF_ENV, wait_for

    rng = random.Random(3)
    data = tmp_path / "data"
    data.mkdir()
    records = [{"instruction": "Say it.", "input": "", "output": " ".join(["kernel"] * rng.choice(range(4, 100, 12)))}
               for _ in range(48)]
    (data / "var.json").write_text(json.dumps(records))
    (data / "dataset_info.json").write_text(json.dumps({"var": {"file_name": "var.json"}}))
    config, document = demo_run_config(demo_assets.root)
    config = TrainConfig.model_validate({**config.model_dump(exclude_unset=True), "dataset": "var",
                                         "dataset_dir": str(data), "max_samples": 48, "max_steps": 12,
                                         "per_device_train_batch_size": 4, "group_by_length": True})
    document["include_num_input_tokens_seen"] = "all"
    run = save_run_dir(tmp_path / "run", config, document).path
    assert "train_sampling_strategy: group_by_length" in (run / "config.yaml").read_text()
    launch(run, LaunchOptions(platform="cpu", extra_env=LF_ENV))
    end = wait_for(lambda: read_exit(run), timeout=240, poll=0.5)
    assert end.returncode == 0, (run / "train.log").read_text()[-2000:] if (run / "train.log").exists() else end
    rows = [json.loads(line) for line in (run / "output" / "trainer_log.jsonl").read_text().splitlines()]
    seen = [r["total_tokens"] for r in rows if "total_tokens" in r]
    per_step = [b - a for a, b in zip([0, *seen], seen, strict=False)][:12]  # the last row: the run's summary
    runs = [per_step[i:i + 3] for i in range(0, 12, 3)]
    assert [run == sorted(run, reverse=True) for run in runs] == [True] * 4, per_step
    assert len(set(per_step)) > 3, per_step


def test_grouping_packed_data_is_a_warning_on_the_field(tmp_path):
    from hipwizard.train.planning.rules import RuleContext, check_config

    ctx = RuleContext(base_dir=tmp_path, deepspeed_installed=True)
    grouped = pick().model_copy(update={"group_by_length": True})
    assert not [i for i in check_config(grouped, ctx) if i.field == "group_by_length"]
    issues = [i for i in check_config(grouped.model_copy(update={"packing": True}), ctx) if i.field == "group_by_length"]
    assert [i.severity for i in issues] == ["warning"] and "packed" in issues[0].message


def test_samples_of_one_length_are_never_grouped_and_the_advice_says_why():
    base = pick()
    grouped = base.model_copy(update={"group_by_length": True})
    cal = Calibration(key={}, measurements=[measured(base, 1.0), measured(grouped, 0.6)])
    fixed = plan(base, CUDA, cal, trials=True)  # plan() says lengths="fixed"
    assert changed(fixed, "group_by_length") == [] and not any(t.config.group_by_length for t in fixed.trials)
    assert "group_by_length: the samples are of one length (--lengths fixed): no padding to remove" in \
        fixed.not_offered
    assert not any(line.startswith("group_by_length on:") for line in fixed.not_offered)
    variable = vplan(base, CUDA, cal, trials=True)
    assert changed(variable, "group_by_length") and any(t.config.group_by_length for t in variable.trials)
