"""A model's shape from its ``config.json``: parameter count by module, module names, no weights loaded.

``load_shape(model)`` accepts a local folder (Hugging Face layout), a Hugging Face hub id whose config is in
the local hub cache, or a hub id listed in ``assets/model_shapes.yaml`` (public config.json values of the
models users bring most often, so a plan works before the weights are downloaded). It returns a
``ShapeResult``: the ``ModelShape`` or the reason there is none (errors are values).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from hipwizard.paths import assets_dir

# Decoder-only families that share Llama's module names and dense SwiGLU MLP; the estimator knows them.
LLAMA_STYLE = {
    "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "GemmaForCausalLM",
    "Gemma2ForCausalLM", "Olmo2ForCausalLM", "GraniteForCausalLM", "InternLM3ForCausalLM",
}
LLAMA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LLAMA_ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class ModelShape:
    """What the estimator needs to know about a decoder-only transformer."""

    architecture: str
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = False
    source: str = ""  # where the config came from

    @property
    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in_features, out_features) of each linear module of one layer, by module name."""
        h, i = self.hidden_size, self.intermediate_size
        q, kv = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        return {
            "q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
            "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h),
        }

    @property
    def module_names(self) -> tuple[str, ...]:
        return LLAMA_MODULES

    def params_by_module(self) -> dict[str, int]:
        """Parameter count of the whole model, grouped as a reader thinks of it."""
        per_layer_attn = sum(a * b for n, (a, b) in self.linear_shapes.items() if n in LLAMA_ATTN)
        per_layer_mlp = sum(a * b for n, (a, b) in self.linear_shapes.items() if n not in LLAMA_ATTN)
        embed = self.vocab_size * self.hidden_size
        return {
            "embed_tokens": embed,
            "attention": per_layer_attn * self.num_layers,
            "mlp": per_layer_mlp * self.num_layers,
            "norms": (2 * self.num_layers + 1) * self.hidden_size,
            "lm_head": 0 if self.tie_word_embeddings else embed,
        }

    @property
    def total_params(self) -> int:
        return sum(self.params_by_module().values())

    @property
    def layer_params(self) -> int:
        return sum(a * b for a, b in self.linear_shapes.values()) + 2 * self.hidden_size

    def lora_params(self, targets: list[str], rank: int) -> int:
        """Trainable LoRA parameters: r * (in + out) per targeted module per layer."""
        shapes = self.linear_shapes
        names = list(shapes) if targets == ["all"] else [t for t in targets if t in shapes]
        return self.num_layers * sum(rank * (shapes[n][0] + shapes[n][1]) for n in names)


@dataclass(frozen=True)
class ShapeResult:
    shape: ModelShape | None
    reason: str = ""  # why there is no shape (or a note on where it came from)
    architecture: str = ""  # known even when the estimator does not support it
    module_names: tuple[str, ...] = field(default=())


def shape_from_config(cfg: dict, source: str = "") -> ShapeResult:
    """Build the shape from a parsed config.json; unsupported architectures say so."""
    archs = cfg.get("architectures") or []
    arch = archs[0] if archs else str(cfg.get("model_type", "unknown"))
    if arch not in LLAMA_STYLE:
        return ShapeResult(
            None, f"architecture {arch!r} is not one the estimator knows (it knows Llama-style dense models: "
            f"{', '.join(sorted(LLAMA_STYLE))})", arch,
        )
    try:
        h = int(cfg["hidden_size"])
        heads = int(cfg["num_attention_heads"])
        shape = ModelShape(
            architecture=arch, hidden_size=h, intermediate_size=int(cfg["intermediate_size"]),
            num_layers=int(cfg["num_hidden_layers"]), num_heads=heads,
            num_kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or h // heads), vocab_size=int(cfg["vocab_size"]),
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)), source=source,
        )
    except (KeyError, TypeError, ValueError) as exc:
        return ShapeResult(None, f"config.json lacks a usable {exc} field", arch, LLAMA_MODULES)
    if min(shape.hidden_size, shape.num_layers, shape.num_heads, shape.vocab_size) <= 0:
        return ShapeResult(None, "config.json has non-positive sizes", arch, LLAMA_MODULES)
    return ShapeResult(shape, source, arch, LLAMA_MODULES)


@lru_cache(maxsize=1)
def known_shapes() -> dict[str, dict]:
    """Hub id -> config.json fields of well-known models (shipped in assets/model_shapes.yaml)."""
    data = yaml.safe_load((assets_dir() / "model_shapes.yaml").read_text(encoding="utf-8")) or {}
    return {str(k): dict(v) for k, v in data.items()}


def _hub_cache_config(model_id: str) -> Path | None:
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", Path.home() / ".cache/huggingface")) / "hub")
    snapshots = hub / f"models--{model_id.replace('/', '--')}" / "snapshots"
    if not snapshots.is_dir():
        return None
    for snap in sorted(snapshots.iterdir()):
        if (snap / "config.json").is_file():
            return snap / "config.json"
    return None


def load_shape(model: str, base_dir: Path | None = None) -> ShapeResult:
    """Shape of ``model`` (folder or hub id), resolving a relative folder against ``base_dir``."""
    if not model:
        return ShapeResult(None, "no model set (model_name_or_path is empty)")
    path = Path(model).expanduser()
    if not path.is_absolute() and base_dir is not None and (base_dir / path).exists():
        path = base_dir / path
    if path.is_dir():
        cfg_path = path / "config.json"
        if not cfg_path.is_file():
            return ShapeResult(None, f"{path} has no config.json (not a Hugging Face model folder)")
        return _read_config(cfg_path)
    if model in known_shapes():
        return shape_from_config(known_shapes()[model], f"shape of {model} shipped with hipwizard")
    cached = _hub_cache_config(model)
    if cached is not None:
        return _read_config(cached)
    if path.is_absolute() or model.startswith((".", "~")) or model.count("/") != 1:
        return ShapeResult(None, f"model folder {model} does not exist")
    return ShapeResult(None, f"{model} is not downloaded and its shape is not known to hipwizard; "
                             "point model_name_or_path at a local folder with config.json")


def _read_config(cfg_path: Path) -> ShapeResult:
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return ShapeResult(None, f"{cfg_path} is unreadable: {exc}")
    if not isinstance(cfg, dict):
        return ShapeResult(None, f"{cfg_path} does not hold a JSON object")
    return shape_from_config(cfg, str(cfg_path))
