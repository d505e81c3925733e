"""TrainConfig types and ranges, and every rule of rules.py (each with a config that breaks it)."""

import pytest
from pydantic import ValidationError

from hipwizard.train.config.llamafactory_info import NameList, installed_templates
from hipwizard.train.config.train_config import FIELD_GROUPS, TrainConfig, field_group, field_help, parse_field
from hipwizard.train.planning.device import DeviceTarget, arch_has_bf16, resolve_device
from hipwizard.train.planning.model_shape import load_shape
from hipwizard.train.planning.rules import RuleContext, check_config
from tests.train.plan_fixtures import recipe_dir, recipe_values

MI300X = DeviceTarget("AMD Instinct MI300X", 192.0, "gfx942", "test")
MI50 = DeviceTarget("AMD Instinct MI50", 32.0, "gfx906", "test")


@pytest.fixture
def base(tmp_path):
    return recipe_dir(tmp_path)


def issues_of(base, device=MI300X, deepspeed=True, **overrides):
    cfg = TrainConfig(**recipe_values(**overrides))
    ctx = RuleContext.gather(cfg, base, device)
    ctx.deepspeed_installed = deepspeed
    return {(i.field, i.severity): i.message for i in check_config(cfg, ctx)}


def test_recipe_is_clean(base):
    assert issues_of(base) == {}


def test_every_field_is_grouped_and_documented():
    grouped = [n for names in FIELD_GROUPS.values() for n in names]
    assert sorted(grouped) == sorted(TrainConfig.model_fields)
    assert grouped and all(field_help(n) for n in grouped)
    assert field_group("lora_rank") == "method" and field_group("zero_stage") == "distributed"


def test_bf16_and_fp16_both_on(base):
    assert "both on" in issues_of(base, fp16=True)[("fp16", "error")]


def test_bf16_on_an_arch_without_it(base):
    msg = issues_of(base, device=MI50)[("bf16", "error")]
    assert "gfx906" in msg and "fp16" in msg
    assert ("bf16", "error") not in issues_of(base, device=MI50, bf16=False, fp16=True)


@pytest.mark.parametrize("arch, expected", [("gfx942", True), ("gfx90a", True), ("gfx942:sramecc+:xnack-", True),
                                            ("gfx906", False), ("gfx1030", False), ("sm_90", True), ("7.5", False),
                                            ("", None), ("tpu", None)])
def test_bf16_support_by_arch(arch, expected):
    assert arch_has_bf16(arch) is expected


def test_zero3_without_deepspeed_installed(base):
    assert "not installed" in issues_of(base, deepspeed=False)[("zero_stage", "error")]
    assert issues_of(base, deepspeed=False, zero_stage=None) == {}


def test_offload_without_zero(base):
    found = issues_of(base, zero_stage=None, offload_optimizer=True, offload_param=True)
    assert ("offload_optimizer", "error") in found and ("offload_param", "error") in found
    assert ("offload_param", "error") in issues_of(base, zero_stage=2, offload_param=True)
    assert issues_of(base, zero_stage=3, offload_optimizer=True, offload_param=True) == {}


def test_dataset_not_in_dataset_info(base):
    msg = issues_of(base, dataset="alpaca_en_demo,my_private_set")[("dataset", "error")]
    assert msg.startswith("dataset my_private_set not in") and "(it has: alpaca_en_demo, identity)" in msg
    assert "not found" in issues_of(base, dataset_dir="elsewhere")[("dataset_dir", "error")]
    assert "LLaMA-Factory's repository" not in msg  # a private set gets no hint about LLaMA-Factory's data


def test_a_dataset_of_llamafactorys_repository_is_named_as_such_with_the_fix(base, tmp_path):
    """alpaca_en_demo ships in LLaMA-Factory's repository (data/), not in the pip package."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dataset_info.json").write_text('{"mine": {"file_name": "mine.json"}}')
    for found in (issues_of(base, dataset_dir="elsewhere")[("dataset_dir", "error")],
                  issues_of(base, dataset="alpaca_en_demo", dataset_dir=str(tmp_path / "data"))[("dataset", "error")]):
        assert "alpaca_en_demo is a dataset of LLaMA-Factory's repository" in found and "not of the pip package" in found
        assert "git clone --depth 1 https://github.com/hiyouga/LLaMA-Factory" in found
        assert "dataset_dir to LLaMA-Factory/data" in found and "llamafactory/alpaca_en" in found


def test_template_unknown_to_installed_llamafactory(base):
    assert "unknown to the installed LLaMA-Factory" in issues_of(base, template="llama-3")[("template", "error")]


def test_installed_template_list_is_read_not_copied():
    names = installed_templates().names
    assert names is not None and {"llama3", "alpaca", "qwen"} <= names and len(names) > 50


def test_template_check_without_llamafactory_is_info_only(base):
    cfg = TrainConfig(**recipe_values(template="whatever"))
    ctx = RuleContext.gather(cfg, base, MI300X)
    ctx.templates = NameList(None, "llamafactory is not installed, so template names cannot be checked")
    found = {(i.field, i.severity) for i in check_config(cfg, ctx)}
    assert found == {("template", "info")}


def test_lora_target_not_a_module_of_the_model(base):
    msg = issues_of(base, lora_target="q_proj,query_key_value")[("lora_target", "error")]
    assert "query_key_value" in msg and "LlamaForCausalLM" in msg
    assert issues_of(base, lora_target="all") == {}
    assert issues_of(base, finetuning_type="full", lora_target="nonsense") == {}


def test_model_dir_without_config_json_and_unknown_arch(base):
    (base / "empty").mkdir()
    # LLaMA-Factory cannot load a folder without config.json: an error, not a warning.
    assert "no config.json" in issues_of(base, model_name_or_path="empty")[("model_name_or_path", "error")]
    msg = issues_of(base, model_name_or_path="unknown_arch")[("model_name_or_path", "warning")]
    assert "MambaForCausalLM" in msg


def test_missing_local_model_folder_is_an_error_but_a_hub_id_is_not(base):
    for missing in ("./gone", "/nonexistent/m8b", "~/nonexistent-hipwizard-model", "a/b/c"):
        msg = issues_of(base, model_name_or_path=missing)[("model_name_or_path", "error")]
        assert "does not exist" in msg
    (base / "weights.bin").write_bytes(b"x")
    assert "is a file" in issues_of(base, model_name_or_path="weights.bin")[("model_name_or_path", "error")]
    # org/name is a hub id LLaMA-Factory downloads: not judged as a folder
    assert ("model_name_or_path", "error") not in issues_of(base, model_name_or_path="someorg/somemodel")


def test_quantization_only_with_lora_and_missing_basics(base):
    assert ("quantization_bit", "error") in issues_of(base, finetuning_type="full", quantization_bit=4)
    found = issues_of(base, output_dir="", template="", dataset="", model_name_or_path="", do_train=False)
    assert {("output_dir", "error"), ("template", "error"), ("dataset", "error"),
            ("model_name_or_path", "error"), ("do_train", "warning")} <= set(found)


@pytest.mark.parametrize("field, value", [
    ("learning_rate", -1e-4), ("learning_rate", 5.0), ("per_device_train_batch_size", 0),
    ("per_device_train_batch_size", 100_000), ("cutoff_len", 10**9), ("lora_dropout", 1.0),
    ("num_train_epochs", 0), ("zero_stage", 1), ("quantization_bit", 3), ("lora_rank", "eight"),
    ("warmup_ratio", 1.5), ("flash_attn", "fa9"),
])
def test_absurd_values_and_wrong_types_are_refused(field, value):
    with pytest.raises(ValidationError):
        TrainConfig(**{field: value})


def test_parse_field_from_typed_text():
    assert parse_field("per_device_train_batch_size", " 16 ") == 16
    assert parse_field("learning_rate", "1e-4") == 1e-4
    assert parse_field("bf16", "yes") is True and parse_field("bf16", "off") is False
    assert parse_field("zero_stage", "") is None and parse_field("zero_stage", "3") == 3
    assert parse_field("max_samples", "") is None
    assert parse_field("dataset", "") == ""
    for name, text in [("learning_rate", "fast"), ("per_device_train_batch_size", "-2"), ("bf16", "maybe")]:
        with pytest.raises(ValueError, match=name):
            parse_field(name, text)


def test_device_from_doctor_report_flags_and_default():
    from hipwizard.doctor.models import GpuInfo

    gpus = [GpuInfo(0, "amd", name="AMD Instinct MI300X", gfx="gfx942", vram_bytes=206158430208)]
    dev = resolve_device(doctor_gpus=gpus)
    assert (dev.vram_gib, dev.arch, dev.source) == (192.0, "gfx942", "doctor report")
    assert resolve_device(vram_gib=80).vram_gib == 80 and resolve_device(device="h200").vram_gib == 140.4
    assert "default" in resolve_device().source
    with pytest.raises(ValueError):
        resolve_device(device="tpu-v5")


def test_shape_counts_match_llamafactory_log(base):
    # llamafactory printed "trainable params: 3,407,872 || all params: 8,033,669,120" for this config.json.
    shape = load_shape("m8b", base).shape
    assert shape.total_params + shape.lora_params(["q_proj", "v_proj"], 8) == 8_033_669_120
    assert shape.lora_params(["q_proj", "v_proj"], 8) == 3_407_872
