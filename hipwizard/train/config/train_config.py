"""``TrainConfig``: the LLaMA-Factory training arguments that matter for LoRA / QLoRA / full SFT.

Field names are LLaMA-Factory's YAML keys (``llamafactory-cli train x.yaml``), with LLaMA-Factory's or the
HF Trainer's default where the key is absent, so an estimate of a config that omits a key is an estimate
of what would run. Three fields are hipwizard's own (``zero_stage``, ``offload_optimizer``,
``offload_param``): they describe the DeepSpeed JSON that the YAML's ``deepspeed`` key points to.

Type and range errors come from pydantic; rules that span fields or look at the machine (bf16 support,
DeepSpeed installed, dataset and template names, LoRA targets) live in ``rules.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

# LlamaBoard's grouping of the same arguments: the editor shows them in this order.
FIELD_GROUPS: dict[str, tuple[str, ...]] = {
    "model": ("model_name_or_path", "quantization_bit", "trust_remote_code", "flash_attn", "enable_liger_kernel",
              "torch_compile"),
    "method": ("stage", "do_train", "finetuning_type", "lora_rank", "lora_alpha", "lora_dropout", "lora_target"),
    "data": ("dataset", "dataset_dir", "template", "cutoff_len", "packing", "neat_packing", "group_by_length",
             "max_samples", "val_size", "preprocessing_num_workers"),
    "training": ("per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate",
                 "num_train_epochs", "max_steps", "lr_scheduler_type", "warmup_ratio", "warmup_steps",
                 "bf16", "fp16", "fp8", "disable_gradient_checkpointing", "optim", "dataloader_num_workers", "use_unsloth",
                 "use_unsloth_gc", "tunableop"),
    "distributed": ("zero_stage", "offload_optimizer", "offload_param", "deepspeed"),
    "output": ("output_dir", "logging_steps", "save_steps", "plot_loss", "overwrite_output_dir",
               "save_only_model", "report_to", "resume_from_checkpoint"),
}

# Not LLaMA-Factory keys, never written into the YAML: the ZeRO fields describe the DeepSpeed JSON; ``tunableop`` is
# a launch-environment knob kept in the run directory's knobs.json (``run/knob_env.py``).
DERIVED_FIELDS = frozenset({"zero_stage", "offload_optimizer", "offload_param", "tunableop"})
# transformers' ``OptimizerNames`` (5.x): what the HF Trainer's ``optim`` accepts. A name outside it fails only when
# the trainer starts; here it is one line at load time.
OPTIMIZERS = frozenset({
    "adamw_torch", "adamw_torch_fused", "adamw_torch_xla", "adamw_torch_npu_fused", "adamw_apex_fused", "adafactor",
    "adamw_anyprecision", "adamw_torch_4bit", "adamw_torch_8bit", "ademamix", "sgd", "adagrad", "adamw_bnb_8bit",
    "adamw_8bit", "ademamix_8bit", "lion_8bit", "lion_32bit", "paged_adamw_32bit", "paged_adamw_8bit",
    "paged_ademamix_32bit", "paged_ademamix_8bit", "paged_lion_32bit", "paged_lion_8bit", "rmsprop", "rmsprop_bnb",
    "rmsprop_bnb_8bit", "rmsprop_bnb_32bit", "galore_adamw", "galore_adamw_8bit", "galore_adafactor",
    "galore_adamw_layerwise", "galore_adamw_8bit_layerwise", "galore_adafactor_layerwise", "lomo", "adalomo",
    "grokadamw", "schedule_free_radam", "schedule_free_adamw", "schedule_free_sgd", "apollo_adamw",
    "apollo_adamw_layerwise", "stable_adamw",
})

Scheduler = Literal[
    "linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup",
    "inverse_sqrt", "reduce_lr_on_plateau", "cosine_with_min_lr", "warmup_stable_decay",
]


class TrainConfig(BaseModel):
    """One LLaMA-Factory training config. Unknown YAML keys are not held here: ``yaml_io`` keeps them."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True, str_strip_whitespace=True)

    # model
    model_name_or_path: str = Field("", description="Local model folder or Hugging Face hub id of the base model.")
    quantization_bit: Literal[4, 8] | None = Field(
        None, description="Load the base model in 4 or 8 bits (QLoRA, bitsandbytes); empty for none.")
    trust_remote_code: bool = Field(False, description="Allow the model's own Python code to run.")
    flash_attn: Literal["auto", "disabled", "sdpa", "fa2", "fa3"] = Field(
        "auto", description="Attention kernel: auto, sdpa (PyTorch), fa2 (FlashAttention-2, CK build on "
        "ROCm), disabled (eager: memory grows with the square of the sequence length).")
    enable_liger_kernel: bool = Field(
        False, description="Liger's fused Triton kernels (RMSNorm, SwiGLU, RoPE, linear+cross-entropy): faster, "
        "no full logits in memory. Needs liger-kernel.")
    torch_compile: bool = Field(False, description="Compile the model with torch.compile (slow first steps).")
    # method
    stage: Literal["sft", "pt", "rm", "ppo", "dpo", "kto"] = Field("sft", description="Training stage; sft = supervised fine-tuning.")
    do_train: bool = Field(False, description="Train (LLaMA-Factory does nothing without it).")
    finetuning_type: Literal["lora", "full", "freeze"] = Field("lora", description="lora trains small adapters; full trains every weight.")
    lora_rank: int = Field(8, ge=1, le=4096, description="LoRA rank r: adapter size (8-64 usual).")
    lora_alpha: int | None = Field(None, ge=1, le=65536, description="LoRA scaling alpha; empty = 2 x rank.")
    lora_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="Dropout on the adapter input (0 to <1).")
    lora_target: str = Field("all", description="Comma-separated module names to adapt (q_proj,v_proj,...) or all.")
    # data
    dataset: str = Field("", description="Comma-separated dataset names from dataset_info.json.")
    dataset_dir: str = Field("data", description="Folder holding dataset_info.json.")
    template: str = Field("", description="Chat template name known to LLaMA-Factory (llama3, qwen, alpaca, ...).")
    cutoff_len: int = Field(2048, ge=1, le=1_048_576, description="Tokens per sample after truncation.")
    packing: bool | None = Field(
        None, description="Pack samples into full cutoff_len sequences: no padding; empty = on for pt only.")
    neat_packing: bool = Field(False, description="Packing without attention across samples (implies packing).")
    group_by_length: bool = Field(
        False, description="Batch samples of similar length together (the HF Trainer's length-grouped sampler): "
        "less padding, the same samples per step; batches come in runs of falling length. Written as the key the "
        "installed transformers takes (train_sampling_strategy: group_by_length from 5.2, else group_by_length).")
    max_samples: int | None = Field(None, ge=1, description="Use at most this many samples per dataset; empty = all.")
    val_size: float = Field(0.0, ge=0.0, description="Held-out share (<1) or count (>=1) for evaluation.")
    preprocessing_num_workers: int | None = Field(None, ge=1, le=1024, description="Processes for tokenising the data.")
    # training
    per_device_train_batch_size: int = Field(8, ge=1, le=4096, description="Sequences per GPU per micro-step.")
    gradient_accumulation_steps: int = Field(1, ge=1, le=65536, description="Micro-steps summed before an optimizer step.")
    learning_rate: float = Field(5e-5, gt=0.0, le=1.0, description="Peak learning rate (LoRA: 1e-4 usual; full: 1e-5).")
    num_train_epochs: float = Field(3.0, gt=0.0, le=10000.0, description="Passes over the data.")
    max_steps: int = Field(-1, ge=-1, description="Stop after this many optimizer steps; -1 = use epochs.")
    lr_scheduler_type: Scheduler = Field("linear", description="Learning-rate schedule (cosine, linear, constant, ...).")
    warmup_ratio: float = Field(0.0, ge=0.0, le=1.0, description="Share of steps spent warming up the learning rate.")
    warmup_steps: int = Field(0, ge=0, description="Warm-up steps (overrides warmup_ratio when > 0).")
    bf16: bool = Field(False, description="Train in bfloat16 (MI300X, MI200, A100/H100 and newer).")
    fp16: bool = Field(False, description="Train in float16 with loss scaling (older GPUs).")
    fp8: bool = Field(
        False, description="FP8 matmuls (torchao Float8Linear through Accelerate; H100/H200, MI300X in FNUZ, MI350). "
        "With transformers 5 it engages only with bf16 and fp16 off: hipwizard's launch then sets "
        "ACCELERATE_MIXED_PRECISION=fp8 (Accelerate keeps a bf16 autocast). Needs torchao; more memory, less precision.")
    disable_gradient_checkpointing: bool = Field(
        False, description="Keep all activations instead of recomputing them: ~1.5x faster, much more memory.")
    optim: str | None = Field(
        None, description="HF Trainer optimizer: adamw_torch (foreach) or adamw_torch_fused (one fused kernel); "
        "empty = transformers' default (fused with torch >= 2.8).")
    dataloader_num_workers: int = Field(
        0, ge=0, le=256, description="Loader processes that collate batches ahead of the step; 0 = in the "
        "training process (tokenising is preprocessing_num_workers).")
    use_unsloth: bool = Field(False, description="Unsloth's LoRA kernels (needs the unsloth package; NVIDIA only).")
    use_unsloth_gc: bool = Field(
        False, description="Unsloth's gradient checkpointing: saved activations go to CPU memory (no package needed).")
    tunableop: bool = Field(
        False, description="ROCm only: PyTorch TunableOp picks the fastest rocBLAS/hipBLASLt GEMM per shape (tunes "
        "on the first steps, results kept in the run folder). Set in the launch environment, not the YAML.")
    # distributed
    zero_stage: Literal[0, 2, 3] | None = Field(
        None, description="DeepSpeed ZeRO stage: empty = no DeepSpeed; 2 shards optimizer and gradients; 3 shards weights too.")
    offload_optimizer: bool = Field(False, description="Keep optimizer states in CPU memory (ZeRO-2/3 only): less VRAM, slower.")
    offload_param: bool = Field(False, description="Keep weights in CPU memory (ZeRO-3 only): least VRAM, much slower.")
    deepspeed: str | None = Field(None, description="DeepSpeed JSON path; hipwizard writes it from the ZeRO fields.")
    # output
    output_dir: str = Field("", description="Where checkpoints and logs go.")
    logging_steps: int = Field(500, ge=1, description="Log the loss every N steps.")
    save_steps: int = Field(500, ge=1, description="Save a checkpoint every N steps.")
    plot_loss: bool = Field(False, description="Save a loss plot at the end.")
    overwrite_output_dir: bool = Field(False, description="Allow writing into a non-empty output_dir.")
    save_only_model: bool = Field(False, description="Checkpoints without optimizer state (smaller; no exact resume).")
    report_to: str | None = Field(None, description="Experiment tracker: none, tensorboard, wandb, ...")
    resume_from_checkpoint: str | None = Field(None, description="Checkpoint folder to resume from.")

    @field_validator("optim")
    @classmethod
    def _known_optimizer(cls, value: str | None) -> str | None:
        if value is not None and value not in OPTIMIZERS:
            raise ValueError("not an optimizer the HF Trainer knows (adamw_torch, adamw_torch_fused, adafactor, "
                             "sgd, adamw_8bit, ...)")
        return value or None

    # --- derived values -------------------------------------------------------------------
    @property
    def lora_targets(self) -> list[str]:
        return [t.strip() for t in self.lora_target.split(",") if t.strip()]

    @property
    def datasets(self) -> list[str]:
        return [d.strip() for d in self.dataset.split(",") if d.strip()]

    @property
    def uses_deepspeed(self) -> bool:
        return self.zero_stage is not None

    @property
    def packs(self) -> bool:
        """Samples are packed into full sequences (LLaMA-Factory: packing, neat_packing, or pt's default)."""
        return bool(self.neat_packing or self.packing or (self.packing is None and self.stage == "pt"))

    @property
    def gradient_checkpointing(self) -> bool:
        return not self.disable_gradient_checkpointing

    def effective_batch(self, world_size: int = 1) -> int:
        return self.per_device_train_batch_size * self.gradient_accumulation_steps * world_size

    def yaml_values(self) -> dict[str, Any]:
        """The LLaMA-Factory keys this config sets explicitly, in field order (derived fields left out)."""
        return {
            name: getattr(self, name) for name in type(self).model_fields
            if name in self.model_fields_set and name not in DERIVED_FIELDS
        }


def field_help(name: str) -> str:
    return TrainConfig.model_fields[name].description or ""


def field_group(name: str) -> str:
    for group, names in FIELD_GROUPS.items():
        if name in names:
            return group
    raise KeyError(name)


def parse_field(name: str, text: str) -> Any:
    """Turn what a user typed into a field value, or raise ``ValueError`` with one readable line.

    Empty text means "unset" for optional fields; ``true/false/yes/no/1/0`` work for booleans.
    """
    info = TrainConfig.model_fields[name]
    raw: Any = text.strip()
    if raw == "" and not info.is_required():
        if _accepts_none(info.annotation):
            raw = None
        elif info.annotation is str:
            raw = ""
        else:
            return info.default
    elif info.annotation is bool:
        low = raw.lower()
        if low in ("true", "yes", "on", "1"):
            raw = True
        elif low in ("false", "no", "off", "0"):
            raw = False
        else:
            raise ValueError(f"{name}: expected true or false, got {text!r}")
    if isinstance(raw, str) and raw.lstrip("-").isdigit():
        try:  # Literal[0, 2, 3] and friends do not coerce text: offer the number first
            return getattr(TrainConfig.model_validate({name: int(raw)}), name)
        except ValidationError:
            pass
    try:
        return getattr(TrainConfig.model_validate({name: raw}), name)
    except ValidationError as exc:
        raise ValueError(describe_errors(exc)[0][1]) from None


def _accepts_none(annotation: Any) -> bool:
    try:
        TypeAdapter(annotation).validate_python(None)
        return True
    except ValidationError:
        return False


def describe_errors(exc: ValidationError) -> list[tuple[str, str]]:
    """(field, one-line message) for each pydantic error, worded for a user, not a developer."""
    out = []
    for err in exc.errors():
        name = ".".join(str(p) for p in err.get("loc", ())) or "config"
        value = err.get("input")
        shown = repr(value) if not isinstance(value, dict) else "a mapping"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")  # a validator's own words
        out.append((name, f"{name}: {msg} (got {shown[:60]})"))
    return out


def build_config(values: dict[str, Any]) -> tuple[TrainConfig, list[tuple[str, str]]]:
    """A config from YAML values; bad fields are reported and left at their default (the editor still works)."""
    known = {k: v for k, v in values.items() if k in TrainConfig.model_fields}
    errors: list[tuple[str, str]] = []
    try:
        return TrainConfig.model_validate(known), errors
    except ValidationError as exc:
        errors = describe_errors(exc)
    bad = {e[0].split(".")[0] for e in errors}
    return TrainConfig.model_validate({k: v for k, v in known.items() if k not in bad}), errors
