"""A calibration: real steps of a few configs on this machine, and the corrections they imply.

``hipwizard train calibrate`` (``measure``) runs the advisor's top candidates for a few steps and
records a ``Measurement`` each (steady step time, device peak memory). ``Calibration`` holds them with what
they are valid for (``key``: GPU, world size, model, method, data, sequence length, torch / llamafactory /
transformers / liger versions) and where they came from (machine, time, the measured GEMM ceiling).

``Calibration.apply(config, throughput, estimate)`` gives the numbers the plan shows:

- a config that was measured: the measurement itself (source "measured");
- any other config: the prediction corrected by the measurements of its own family first — the configs that
  differ from it only in the batch split (same DeepSpeed, offload, checkpointing, Liger, compile, attention,
  packing): step time = a x compute part + b x fixed per-micro-batch part (+ the other terms x a), memory =
  prediction + c + d x the per-token part (activations, logits, slack), least squares when the family's
  measurements span different batch splits; otherwise one ratio (time) and one slope on the per-token part
  (memory: what the model misses grows with the tokens a micro-batch holds). A config with no measured family
  takes the same ratio and slope from all measurements, weighted by similarity (0.1 per differing setting)
  (source "calibrated").

Why families: on the H200 (issue 18) the no-DeepSpeed configs missed 5.7 GiB at 16 sequences a micro-batch and
the ZeRO-2 ones 1.0 GiB; a fit across both moved a ZeRO-2 prediction the wrong way (+5.0% where the raw model
was -1.4%). Within a family the miss was proportional to the per-token part (5.7 and 2.6 GiB at 46 and 23 GiB).

Stored in ``.hipwizard/train.json`` by ``state.save_calibration``; nothing here imports torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.memory import MemoryEstimate, MemoryPart
from hipwizard.train.planning.throughput import Throughput

Source = Literal["measured", "calibrated", "predicted"]
# How each face names a number's source (never colour alone): measured on this machine, predicted and then
# corrected by this machine's calibration, or the H200-fitted model only.
SOURCE_WORDS: dict[str, str] = {"measured": "measured here", "calibrated": "calibrated here", "predicted": "predicted"}
# Settings that change what a step does; the batch split is handled by the fit's per-token terms. Each knob the
# advisor varies is one (issue 34: a measurement of one setting is never another's): a config of another family
# is only ever "calibrated here (from other settings)", never "measured".
KIND_FIELDS = ("zero_stage", "offload_optimizer", "offload_param", "disable_gradient_checkpointing",
               "enable_liger_kernel", "torch_compile", "flash_attn", "packing", "neat_packing", "optim",
               "dataloader_num_workers", "use_unsloth", "use_unsloth_gc", "tunableop", "group_by_length", "fp8")
# Knobs older calibrations did not record: they ran at the default (TrainConfig's), so they are read as that.
_ADDED_KNOBS = ("optim", "dataloader_num_workers", "use_unsloth", "use_unsloth_gc", "tunableop", "group_by_length",
                "fp8")
SHAPE_FIELDS = ("per_device_train_batch_size", "gradient_accumulation_steps")
KEY_VERSIONS = ("torch", "llamafactory", "transformers", "liger-kernel")
PER_TOKEN_PARTS = ("activations", "logits and loss", "allocator slack")


def knobs_of(config: TrainConfig) -> dict[str, Any]:
    return {f: getattr(config, f) for f in KIND_FIELDS + SHAPE_FIELDS}


@dataclass
class Measurement:
    label: str
    knobs: dict[str, Any]
    ok: bool
    step_s: float | None = None  # steady optimizer-step time (warm-up steps excluded)
    tokens_per_s: float | None = None
    peak_gib: float | None = None  # device memory in use at the peak, minus before the run
    allocated_gib: float | None = None  # RECORD_VRAM: torch max allocated
    reserved_gib: float | None = None
    predicted_step_s: float = 0.0
    predicted_compute_s: float = 0.0  # the prediction's token-compute share (scaled by the fit)
    predicted_peak_gib: float = 0.0
    predicted_per_token_gib: float = 0.0
    steps: int = 0
    wall_s: float = 0.0
    error: str = ""
    run_dir: str = ""
    # Costs beyond the steady steps, for the wall time of a planned run (``planning.wall``); None: not measured
    # (older calibrations, a window too short to hold a checkpoint, steps too fast for the clock):
    first_step_s: float | None = None  # launch to the first logged step (the calibrator's clock)
    startup_s: float | None = None  # launch to the first steady step, less what steady steps would have taken
    checkpoint_s: float | None = None  # one checkpoint save: the step after it less the median steady step
    checkpoint_step: int | None = None  # the step whose save was timed

    @classmethod
    def from_dict(cls, d: dict) -> "Measurement":
        names = cls.__dataclass_fields__
        m = cls(**{k: v for k, v in d.items() if k in names})
        if isinstance(m.knobs, dict):
            for f in _ADDED_KNOBS:
                m.knobs.setdefault(f, TrainConfig.model_fields[f].default)
        return m


def gpu_matches(a: str, b: str) -> bool:
    """"NVIDIA H200" and "H200" match; "NVIDIA H100 80GB HBM3" and "NVIDIA H200" do not."""
    na, nb = (re.sub(r"[^a-z0-9]", "", s.lower()) for s in (a, b))
    return bool(na and nb) and (na in nb or nb in na)


def calibration_key(config: TrainConfig, *, gpu: str, world_size: int, params: int | None, seq_len: int,
                    lengths: str | None, versions: dict[str, str]) -> dict[str, Any]:
    return {"gpu": gpu, "world_size": world_size, "params": params, "finetuning_type": config.finetuning_type,
            "lora_target": config.lora_target, "lora_rank": config.lora_rank,
            "quantization_bit": config.quantization_bit, "dataset": config.dataset, "cutoff_len": config.cutoff_len,
            "seq_len": seq_len, "lengths": lengths, **{v: versions.get(v, "") for v in KEY_VERSIONS}}


def key_mismatch(stored: dict[str, Any], wanted: dict[str, Any]) -> str:
    """Why a stored calibration does not apply ("" when it does): the first differing item."""
    for k, v in wanted.items():
        s = stored.get(k)
        if k == "gpu":
            if not gpu_matches(str(s or ""), str(v or "")):
                return f"GPU {s or '?'} vs {v or '?'}"
        elif k == "lengths" and (s is None or v is None):
            continue
        elif s != v:
            return f"{k} {s!r} vs {v!r}"
    return ""


def _fit2(rows: list[tuple[float, float, float, float]]) -> tuple[float, float] | None:
    """Weighted least squares y = p*x1 + q*x2 over rows (w, x1, x2, y); None when singular."""
    s11 = sum(w * a * a for w, a, _, _ in rows)
    s12 = sum(w * a * b for w, a, b, _ in rows)
    s22 = sum(w * b * b for w, _, b, _ in rows)
    t1 = sum(w * a * y for w, a, _, y in rows)
    t2 = sum(w * b * y for w, _, b, y in rows)
    det = s11 * s22 - s12 * s12
    if abs(det) <= 1e-12 * max(1e-30, s11 * s22):
        return None
    return (t1 * s22 - t2 * s12) / det, (s11 * t2 - s12 * t1) / det


@dataclass
class Calibration:
    key: dict[str, Any]
    measurements: list[Measurement] = field(default_factory=list)
    machine: str = ""
    created: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    ceiling_tflops: float | None = None
    config_path: str = ""
    wall_s: float = 0.0
    stopped: bool = False
    environment: dict | None = None  # doctor.fingerprint of the machine it was measured on

    def to_dict(self) -> dict:
        d = asdict(self)
        d["measurements"] = [asdict(m) for m in self.measurements]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration | None":
        try:
            ms = [Measurement.from_dict(m) for m in d.get("measurements", [])]
            names = cls.__dataclass_fields__
            return cls(**{**{k: v for k, v in d.items() if k in names and k != "measurements"}, "measurements": ms})
        except (TypeError, ValueError, AttributeError):
            return None

    @property
    def good(self) -> list[Measurement]:
        return [m for m in self.measurements if m.ok and m.step_s]

    def find(self, config: TrainConfig) -> Measurement | None:
        knobs = knobs_of(config)
        return next((m for m in self.measurements if m.knobs == knobs), None)

    def tokens_per_step(self, default: float) -> float:
        """Tokens an optimizer step really held in the measured runs (the data may be shorter than the
        sequence length planned with): the median over the measurements, else ``default``."""
        seen = sorted(m.tokens_per_s * m.step_s for m in self.good if m.tokens_per_s and m.step_s)
        return seen[len(seen) // 2] if seen else default

    def _weights(self, config: TrainConfig, ms: list[Measurement]) -> list[float]:
        return [0.1 ** sum(1 for f in KIND_FIELDS if m.knobs.get(f) != getattr(config, f)) for m in ms]

    def _rows(self, config: TrainConfig, ms: list[Measurement]) -> tuple[list[float], list[Measurement], bool]:
        """(weights, measurements, own family?): the config's family alone when it was measured, else all."""
        family = [m for m in ms if all(m.knobs.get(f) == getattr(config, f) for f in KIND_FIELDS)]
        if family:
            return [1.0] * len(family), family, True
        return self._weights(config, ms), ms, False

    def correct_step(self, config: TrainConfig, predicted_s: float, compute_s: float) -> float | None:
        if not self.good:
            return None
        w, ms, _own = self._rows(config, self.good)
        timed = [(wi, m, m.step_s) for wi, m in zip(w, ms, strict=True) if m.step_s is not None]  # all: ``good``
        rows = [(wi, m.predicted_compute_s, m.predicted_step_s - m.predicted_compute_s, step_s)
                for wi, m, step_s in timed]
        fit = _fit2(rows) if len({round(r[2] / max(r[1], 1e-9), 4) for r in rows}) > 1 else None
        if fit is None or fit[0] <= 0 or fit[1] < 0:
            ratio = math.exp(sum(wi * math.log(step_s / m.predicted_step_s) for wi, m, step_s in timed) / sum(w))
            return predicted_s * ratio
        return fit[0] * compute_s + fit[1] * (predicted_s - compute_s)

    def correct_peak(self, config: TrainConfig, predicted_gib: float, per_token_gib: float) -> float | None:
        measured = [m for m in self.good if m.peak_gib]
        if not measured:
            return None
        w, ms, own = self._rows(config, measured)
        rows = [(wi, 1.0, m.predicted_per_token_gib, m.peak_gib - m.predicted_peak_gib)
                for wi, m in zip(w, ms, strict=True) if m.peak_gib is not None]  # all: ``measured``
        tokens = [r[2] for r in rows]
        if own and len(rows) >= 2 and max(tokens) - min(tokens) > 0.05 * max(tokens):
            fit = _fit2(rows)
            if fit is not None:
                return predicted_gib + fit[0] + fit[1] * per_token_gib
        squares = sum(wi * t * t for wi, _, t, _ in rows)
        if squares <= 0:  # nothing measured grows with tokens: the mean miss as an offset
            return predicted_gib + sum(wi * r for wi, _, _, r in rows) / sum(w)
        slope = sum(wi * t * r for wi, _, t, r in rows) / squares
        return predicted_gib + slope * per_token_gib

    def apply(self, config: TrainConfig, throughput: Throughput, estimate: MemoryEstimate, *,
              tokens_per_step: float) -> "Applied":
        """The numbers to show for ``config``: measured, calibrated, or the prediction unchanged."""
        m = self.find(config)
        borrowed = False
        step: float | None
        peak: float | None
        source: Source
        if m is not None and m.ok and m.step_s:
            step, peak, source = m.step_s, m.peak_gib, "measured"
        else:
            step = self.correct_step(config, throughput.step_seconds, compute_seconds(throughput))
            peak = self.correct_peak(config, estimate.total_gib, per_token_gib(estimate)) if estimate.available else None
            source = "calibrated" if step is not None else "predicted"
            borrowed = source == "calibrated" and not self._rows(config, self.good)[2]
        if step is not None and step > 0:
            terms = throughput.terms + ((f"{source} on this machine", step - throughput.step_seconds),)
            throughput = Throughput(self.tokens_per_step(tokens_per_step) / step, step, terms)
        memory_source: Source = "predicted"
        if peak is not None and estimate.available:
            memory_source = source
            estimate = replace(estimate, parts=[*estimate.parts, MemoryPart(
                "calibration", peak - estimate.total_gib,
                f"corrected by calibration ({SOURCE_WORDS[source]}, {self.machine or 'this machine'}): the model "
                f"said {estimate.total_gib:.1f} GiB")])
        return Applied(throughput, estimate, source, m, memory_source, borrowed)


@dataclass
class Applied:
    """What ``Calibration.apply`` gives a config: its numbers and where each comes from. ``memory_source`` differs
    from ``source`` when a run was timed but its device peak could not be read (a CPU run, no telemetry);
    ``borrowed``: calibrated from configs with other settings (its own family was not measured)."""

    throughput: Throughput
    estimate: MemoryEstimate
    source: Source
    measured: Measurement | None
    memory_source: Source
    borrowed: bool = False


def source_words(source: Source, memory_source: Source | None = None, borrowed: bool = False) -> str:
    """"measured here", "calibrated here (from other settings)", "measured here; memory predicted", ..."""
    words = SOURCE_WORDS.get(source, source) + (" (from other settings)" if borrowed else "")
    if memory_source is not None and memory_source != source:
        words += f"; memory {SOURCE_WORDS.get(memory_source, memory_source)}"
    return words


def compute_seconds(throughput: Throughput) -> float:
    """The share of a predicted step that scales with token compute (tokens, recompute, attention, kernels)."""
    fixed = ("micro-batch", "ZeRO-3", "weights stream", "optimizer step")
    return sum(t for why, t in throughput.terms if not any(f in why for f in fixed))


def per_token_gib(estimate: MemoryEstimate) -> float:
    return sum(p.gib for p in estimate.parts if p.name in PER_TOKEN_PARTS)
