import pytest
import yaml

from hipwizard.errors import UserError
from hipwizard.train.config.yaml_io import load_yaml, parse_yaml, render_yaml, save_yaml
from tests.train.plan_fixtures import recipe_dir


def test_load_recipe_reads_known_fields_and_zero_from_json(tmp_path):
    loaded = load_yaml(recipe_dir(tmp_path) / "recipe.yaml")
    cfg = loaded.config
    assert (cfg.per_device_train_batch_size, cfg.gradient_accumulation_steps) == (4, 4)
    assert cfg.learning_rate == 5e-5 and cfg.lr_scheduler_type == "cosine" and cfg.bf16
    assert cfg.lora_targets == ["q_proj", "v_proj"]
    assert (cfg.zero_stage, cfg.offload_optimizer, cfg.offload_param) == (3, False, False)
    assert loaded.errors == []
    assert set(loaded.unknown_keys) == {"overwrite_cache", "ddp_timeout"}  # dataloader_num_workers: a knob (issue 34)
    assert cfg.dataloader_num_workers == 4


def test_round_trip_keeps_unknown_keys_comments_and_unchanged_text(tmp_path):
    path = recipe_dir(tmp_path) / "recipe.yaml"
    original = path.read_text()
    loaded = load_yaml(path)
    assert render_yaml(loaded.config, loaded.document) == original  # nothing edited: byte for byte

    loaded.config.per_device_train_batch_size = 16
    loaded.config.gradient_accumulation_steps = 1
    loaded.config.flash_attn = "sdpa"
    save_yaml(path, loaded.config, loaded.document)
    text = path.read_text()
    assert "# unknown to hipwizard: must survive" in text and "### dataset" in text
    assert "learning_rate: 5.0e-5" in text  # untouched value keeps its spelling
    data = yaml.safe_load(text)
    assert data["overwrite_cache"] is True and data["ddp_timeout"] == 180000000
    assert data["per_device_train_batch_size"] == 16 and data["flash_attn"] == "sdpa"
    assert list(data).index("per_device_train_batch_size") > list(data).index("output_dir")  # stays in place


def test_turning_deepspeed_off_drops_the_key_and_new_floats_stay_floats(tmp_path):
    loaded = load_yaml(recipe_dir(tmp_path) / "recipe.yaml")
    loaded.config.zero_stage = None
    loaded.config.learning_rate = 1e-4
    data = yaml.safe_load(render_yaml(loaded.config, loaded.document))
    assert "deepspeed" not in data
    assert isinstance(data["learning_rate"], float) and data["learning_rate"] == 1e-4


def test_deepspeed_name_guessed_when_json_missing(tmp_path):
    loaded = parse_yaml("deepspeed: examples/deepspeed/ds_z2_offload_config.json\n", tmp_path / "x.yaml")
    assert (loaded.config.zero_stage, loaded.config.offload_optimizer) == (2, True)
    assert "guessed from its name" in loaded.notes[0]


@pytest.mark.parametrize("text, words", [
    ("a: [1, 2\nb: 3\n", "not valid YAML at line"),
    ("- just\n- a list\n", "must be a YAML mapping"),
    ("key: value\n  bad indent: 1\n", "not valid YAML"),
])
def test_malformed_yaml_is_one_clear_error(text, words):
    with pytest.raises(UserError, match=words):
        parse_yaml(text)


def test_wrong_types_are_reported_per_field_and_the_rest_loads():
    loaded = parse_yaml("learning_rate: fast\nper_device_train_batch_size: -3\ncutoff_len: 2048\nbf16: true\n")
    fields = {f for f, _ in loaded.errors}
    assert fields == {"learning_rate", "per_device_train_batch_size"}
    assert loaded.config.cutoff_len == 2048 and loaded.config.bf16
    assert loaded.config.learning_rate == 5e-5  # left at the default, never half-applied
    assert "learning_rate: fast" in render_yaml(loaded.config, loaded.document)  # the user's text is not overwritten


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_yaml(tmp_path / "nope.yaml")
    with pytest.raises(UserError, match="is a folder"):
        load_yaml(tmp_path)


def test_empty_file_is_an_empty_config(tmp_path):
    (tmp_path / "e.yaml").write_text("")
    assert load_yaml(tmp_path / "e.yaml").config.model_name_or_path == ""
