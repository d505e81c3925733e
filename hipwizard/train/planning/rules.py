"""The rules users trip over, checked before a run instead of twenty minutes into one.

``check_config(config, context)`` returns ``ConfigIssue``s (field, severity, message). The context carries
what the rules look at outside the config: the folder relative paths start from, the target device,
whether DeepSpeed is installed, the installed LLaMA-Factory's templates and the model's module names.
``RuleContext.gather`` collects all of it without importing torch or llamafactory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hipwizard.train.config.llamafactory_info import (
    NameList,
    dataset_names,
    deepspeed_installed,
    installed_templates,
    precision_fixed_early,
    repo_dataset_hint,
    torchao_installed,
)
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.device import DeviceTarget
from hipwizard.train.planning.model_shape import ShapeResult, load_shape

Severity = Literal["error", "warning", "info"]
SEVERITY_SYMBOL = {"error": "✖", "warning": "⚠", "info": "ℹ"}


@dataclass(frozen=True)
class ConfigIssue:
    field: str
    severity: Severity
    message: str

    def line(self) -> str:
        return f"{SEVERITY_SYMBOL[self.severity]} {self.severity}: {self.message}"


@dataclass
class RuleContext:
    base_dir: Path = field(default_factory=Path.cwd)
    device: DeviceTarget | None = None
    deepspeed_installed: bool = True
    templates: NameList = field(default_factory=lambda: NameList(None, "not looked up"))
    shape: ShapeResult | None = None
    torchao_installed: bool = True
    precision_fixed_early: bool | None = None  # the installed transformers' (``llamafactory_info``)

    @classmethod
    def gather(cls, config: TrainConfig, base_dir: Path, device: DeviceTarget | None = None) -> "RuleContext":
        return cls(
            base_dir=base_dir, device=device, deepspeed_installed=deepspeed_installed(),
            templates=installed_templates(), shape=load_shape(config.model_name_or_path, base_dir),
            torchao_installed=torchao_installed(), precision_fixed_early=precision_fixed_early(),
        )


def resolve_path(text: str, base_dir: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base_dir / path


def check_config(config: TrainConfig, ctx: RuleContext) -> list[ConfigIssue]:
    """Every cross-field and machine rule; an empty list means LLaMA-Factory should accept the config."""
    issues: list[ConfigIssue] = []
    add = lambda f, sev, msg: issues.append(ConfigIssue(f, sev, msg))  # noqa: E731

    # precision
    if config.bf16 and config.fp16:
        add("fp16", "error", "bf16 and fp16 are both on; choose one (bf16 on MI300X)")
    if config.bf16 and ctx.device is not None and ctx.device.bf16 is False:
        add("bf16", "error", f"bf16 is on but {ctx.device.name} ({ctx.device.arch}) has no bfloat16 support; use fp16")
    if not config.bf16 and not config.fp16 and not config.fp8 and ctx.device is not None and ctx.device.bf16:
        add("bf16", "info", f"neither bf16 nor fp16 is on: training runs in float32; {ctx.device.name} supports bf16")

    if config.fp8:
        _check_fp8(config, ctx, add)

    # DeepSpeed
    if config.zero_stage is not None and not ctx.deepspeed_installed:
        add("zero_stage", "error", f"ZeRO-{config.zero_stage} needs DeepSpeed, which is not installed "
            "(pip install deepspeed, or clear the ZeRO stage)")
    if config.offload_optimizer and config.zero_stage not in (2, 3):
        add("offload_optimizer", "error", "optimizer offload needs DeepSpeed ZeRO-2 or ZeRO-3")
    if config.offload_param and config.zero_stage != 3:
        add("offload_param", "error", "parameter offload needs DeepSpeed ZeRO-3")
    if config.quantization_bit is not None and config.finetuning_type != "lora":
        add("quantization_bit", "error", "a quantized base model can only be trained with LoRA (QLoRA)")

    _check_data(config, ctx, add)
    _check_template(config, ctx, add)
    _check_model(config, ctx, add)

    if config.group_by_length and config.packs:
        add("group_by_length", "warning", "group_by_length does nothing on packed data (every pack has cutoff_len "
            "tokens): turn one of them off")
    if not config.do_train:
        add("do_train", "warning", "do_train is off: llamafactory-cli train would load everything and not train")
    if not config.output_dir:
        add("output_dir", "error", "output_dir is empty: LLaMA-Factory needs a folder for checkpoints")
    if config.max_steps == -1 and config.num_train_epochs <= 0:
        add("num_train_epochs", "error", "no stopping point: set num_train_epochs or max_steps")
    if config.lora_alpha is not None and config.finetuning_type == "lora" and config.lora_alpha > 64 * config.lora_rank:
        add("lora_alpha", "warning", f"lora_alpha {config.lora_alpha} is over 64 x rank: updates will be huge")
    return issues


# Issue 34, on an H100 (tests/fixtures/train/h100_fp8_issue34.json): what fp8 did there, in words.
FP8_BF16_WORDS = ("on an H100, 8B LoRA 16 x 1: 0.810 s a step vs 0.809 s without it, the same peak, and the loss "
                  "within 0.002 of it at every step (run-to-run noise)")
FP8_MEMORY_WORDS = ("on an 80 GB H100 an 8B LoRA at 16 x 830 tokens without checkpointing, 68 GiB in bf16, ran out "
                    "of memory in its first FP8 step (with ZeRO-2, 64 GiB in bf16, the first step failed with the "
                    "card's memory full)")


def _check_fp8(config: TrainConfig, ctx: RuleContext, add) -> None:
    """LLaMA-Factory's ``fp8``: refused with quantization, needs torchao and FP8 hardware, and with transformers
    5 engages only with bf16/fp16 off (``launcher.fp8_engages``)."""
    if config.quantization_bit is not None:
        add("fp8", "error", "LLaMA-Factory refuses FP8 with a quantized base model (quantization_bit): turn one off")
    if not ctx.torchao_installed:
        add("fp8", "error", "fp8 needs torchao (Accelerate's FP8 backend here): pip install torchao, or turn fp8 off")
    if ctx.device is not None and ctx.device.fp8 is False:
        add("fp8", "error", f"{ctx.device.name} ({ctx.device.arch}) has no FP8 matrix instructions (sm_89 and newer; "
            "MI300X gfx942 in the FNUZ encodings, MI350 gfx950): turn fp8 off")
    on = "bf16" if config.bf16 else "fp16" if config.fp16 else ""
    if on and ctx.precision_fixed_early is not False:
        add("fp8", "warning", f"fp8 is on but so is {on}, which wins: the run trains in {on}, not FP8 (transformers 5 "
            f"takes the precision from {on} when its arguments are built, before LLaMA-Factory asks for FP8; its log "
            f"says \"Accelerate FP8 status - enabled: False\"; {FP8_BF16_WORDS}). For FP8 turn {on} off: "
            "hipwizard's launch then asks for FP8 in time (ACCELERATE_MIXED_PRECISION=fp8; a bf16 autocast stays)")
    elif not on:
        add("fp8", "info", "FP8 through the launch environment: hipwizard's launch sets ACCELERATE_MIXED_PRECISION=fp8 "
            "(llamafactory-cli run by hand would not engage it) and Accelerate converts the Linear layers under a "
            "bf16 autocast (less precision in their matmuls); the FP8 copies it keeps beside the bf16 tensors are not "
            f"in the memory estimate: {FP8_MEMORY_WORDS}; its speed was never timed, so it is never advised")


def _check_data(config: TrainConfig, ctx: RuleContext, add) -> None:
    if not config.datasets:
        add("dataset", "error", "no dataset set")
        return
    if config.dataset_dir.upper() == "ONLINE":
        return  # names are hub ids then; nothing local to check
    folder = resolve_path(config.dataset_dir, ctx.base_dir)
    names = dataset_names(folder)
    if names.names is None:
        hint = repo_dataset_hint(config.datasets)
        add("dataset_dir", "error", f"cannot check dataset names: {names.reason}" + (f"; {hint}" if hint else ""))
        return
    missing = [d for d in config.datasets if d not in names.names]
    if missing:
        shown = ", ".join(sorted(names.names)[:6]) + (" ..." if len(names.names) > 6 else "")
        hint = repo_dataset_hint(missing)
        add("dataset", "error", f"dataset {', '.join(missing)} not in {folder / 'dataset_info.json'} (it has: {shown})"
            + (f"; {hint}" if hint else ""))


def _check_template(config: TrainConfig, ctx: RuleContext, add) -> None:
    if not config.template:
        if config.stage != "pt":
            add("template", "error", "no template set: supervised stages need the model's chat template (e.g. llama3)")
        return
    if ctx.templates.names is None:
        add("template", "info", ctx.templates.reason)
    elif config.template not in ctx.templates.names:
        close = sorted(n for n in ctx.templates.names if n.startswith(config.template[:3]))[:5]
        hint = f" (similar: {', '.join(close)})" if close else ""
        add("template", "error", f"template {config.template!r} is unknown to the installed LLaMA-Factory{hint}")


def _missing_model_folder(model: str, base_dir: Path) -> str:
    """Why ``model`` cannot be loaded, when it names a local folder that is not a model ("" otherwise).
    A bare ``org/name`` is a hub id LLaMA-Factory downloads, so only paths are judged here."""
    path = resolve_path(model, base_dir)
    if path.is_dir():
        return "" if (path / "config.json").is_file() else f"model folder {path} has no config.json (not a Hugging Face model folder)"
    if path.exists():
        return f"model_name_or_path {path} is a file; it must be a model folder"
    if Path(model).expanduser().is_absolute() or model.startswith((".", "~")) or model.count("/") > 1:
        return f"model folder {path} does not exist"
    return ""


def _check_model(config: TrainConfig, ctx: RuleContext, add) -> None:
    if not config.model_name_or_path:
        add("model_name_or_path", "error", "no model set")
        return
    missing = _missing_model_folder(config.model_name_or_path, ctx.base_dir)
    if missing:
        add("model_name_or_path", "error", missing)
        return
    shape = ctx.shape
    if shape is None:
        return
    if shape.shape is None and not shape.module_names:
        # Not an error of the config: the estimate says it cannot; the rule on targets cannot run.
        add("model_name_or_path", "warning", f"cannot read the model's shape: {shape.reason}")
        return
    if config.finetuning_type != "lora":
        return
    targets = config.lora_targets
    if not targets:
        add("lora_target", "error", "lora_target is empty (use all, or module names like q_proj,v_proj)")
        return
    if targets == ["all"]:
        return
    unknown = [t for t in targets if t not in shape.module_names]
    if unknown:
        add("lora_target", "error", f"{', '.join(unknown)} not a module of {shape.architecture} "
            f"(its linear modules: {', '.join(shape.module_names)})")
