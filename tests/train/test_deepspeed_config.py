import json

import pytest

from hipwizard.train.config.deepspeed import ZeroSettings, build_deepspeed_config, read_zero_settings
from tests.train.plan_fixtures import FIXTURES

EXAMPLES = json.loads((FIXTURES / "llamafactory_ds_examples.json").read_text())["examples"]
CASES = {
    "ds_z0_config.json": ZeroSettings(0),
    "ds_z2_config.json": ZeroSettings(2),
    "ds_z2_offload_config.json": ZeroSettings(2, offload_optimizer=True),
    "ds_z3_config.json": ZeroSettings(3),
    "ds_z3_offload_config.json": ZeroSettings(3, offload_optimizer=True, offload_param=True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_equivalent_to_llamafactory_examples(name):
    assert build_deepspeed_config(CASES[name]) == EXAMPLES[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_read_back_settings_of_examples(name):
    assert read_zero_settings(EXAMPLES[name]) == CASES[name]


def test_zero3_optimizer_offload_only():
    ds = build_deepspeed_config(ZeroSettings(3, offload_optimizer=True))
    zero = ds["zero_optimization"]
    assert zero["offload_optimizer"] == {"device": "cpu", "pin_memory": True}
    assert "offload_param" not in zero
    assert ds["train_micro_batch_size_per_gpu"] == "auto" and ds["bf16"] == {"enabled": "auto"}
    assert json.loads(json.dumps(ds)) == ds  # serialisable as is


@pytest.mark.parametrize("kwargs", [dict(stage=1), dict(stage=0, offload_optimizer=True), dict(stage=2, offload_param=True)])
def test_impossible_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        ZeroSettings(**kwargs)


def test_read_zero1_as_2_and_bad_json():
    assert read_zero_settings({"zero_optimization": {"stage": 1}}).stage == 2
    with pytest.raises(ValueError):
        read_zero_settings({"zero_optimization": {"stage": "three"}})
    with pytest.raises(ValueError):
        read_zero_settings([1, 2])
