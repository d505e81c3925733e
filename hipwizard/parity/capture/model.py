"""Capture a Hugging Face causal LM's module outputs on deterministic inputs into one safetensors file.

torch and transformers are imported inside the functions (this module is importable without them).
The file holds ``input/*`` (what was fed), ``output/<module>`` (what each hooked module returned, in the
run's dtype) and a ``hipwizard`` metadata entry (JSON: devices, versions, dtype, modules in execution
order with shapes, config and weights hashes). Progress goes to a ``hipwizard.progress.ProgressFn``.
"""

from __future__ import annotations

import fnmatch
import json
import platform
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hipwizard.errors import UserError
from hipwizard.parity.capture import sketch
from hipwizard.parity.capture.attention import hf_implementation, kernel_context
from hipwizard.parity.capture.backward import run_backward
from hipwizard.parity.capture.fingerprint import config_hash, weights_hash
from hipwizard.parity.capture.tensors import host_copy, perturbation_hook
from hipwizard.parity.compare.tolerances import canonical_dtype
from hipwizard.parity.tensorfile import (
    META_KEY,
    read_meta,
    read_tensor_file,
    write_tensor_file,
)
from hipwizard.progress import Progress, ProgressFn, quiet

FORMAT = "hipwizard-parity/1"

_LAYER_PART = re.compile(r"\.\d+\.(self_attn|attn|self_attention|attention|mlp|feed_forward)$")
# anchored at a name's start or after a dot: PEFT wraps the model as base_model.model.model.norm
_FINAL_NORM = re.compile(r"(?:^|\.)(model|transformer|gpt_neox|model\.decoder)\.(norm|ln_f|final_layer_norm|final_layernorm)$")


@dataclass
class CaptureResult:
    """A finished capture: where it went, how big it is, where the time went."""

    path: Path
    bytes: int
    modules: int
    timings: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def torch_dtype(name: str):
    import torch  # heavy: torch

    return {"fp64": torch.float64, "fp32": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16}[canonical_dtype(name)]


def pick_device(name: str) -> str:
    """'auto' -> 'cuda' when a GPU (CUDA or ROCm/HIP) is visible, else 'cpu'."""
    import torch  # heavy: torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UserError("--device cuda asked for, but torch sees no GPU here (torch.cuda.is_available() is False)")
    if name not in ("cpu",) and not name.startswith("cuda"):
        raise UserError(f"unknown device {name!r} (choose cpu, cuda or auto)")
    return name


def environment(device: str) -> dict[str, Any]:
    """Device name and torch / HIP / CUDA versions, for the capture metadata."""
    import torch  # heavy: torch

    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(torch.device(device))
    else:
        name = _cpu_name()
    return {"device": device, "device_name": name, "torch": torch.__version__,
            "hip": getattr(torch.version, "hip", None), "cuda": torch.version.cuda if not torch.version.hip else None}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return "CPU " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"CPU {platform.machine()}"


def default_modules(model) -> list[str]:
    """Every decoder layer's attention and MLP, the final norm and the logits (output embeddings)."""
    names = [n for n, _m in model.named_modules() if _LAYER_PART.search(n) or _FINAL_NORM.search(n)]
    head = model.get_output_embeddings()
    if head is not None:
        names += [n for n, m in model.named_modules() if m is head]
    return names


def select_modules(model, patterns: list[str] | None) -> list[str]:
    """Module names matching comma-free glob ``patterns`` (default: ``default_modules``)."""
    if not patterns:
        chosen = default_modules(model)
        if not chosen:
            raise UserError("found no decoder layers in this model: name the modules with --layers PATTERNS")
        return chosen
    all_names = [n for n, _m in model.named_modules() if n]
    chosen = []
    for pattern in patterns:
        hits = [n for n in all_names if fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            sample = ", ".join(all_names[:6])
            raise UserError(f"--layers pattern {pattern!r} matches no module (names look like: {sample}, ...)")
        chosen += [h for h in hits if h not in chosen]
    return chosen


def make_inputs(vocab_size: int, seed: int, batch: int, seq: int) -> dict:
    """Token ids drawn from a seeded CPU generator: identical on every machine and torch build."""
    import torch  # heavy: torch

    if batch < 1 or seq < 1:
        raise UserError("--batch and --seq must be at least 1")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    ids = torch.randint(0, vocab_size, (batch, seq), generator=gen, dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def load_model(model_dir: Path, dtype: str, device: str, attn: str | None = None, adapter: Path | None = None):
    """A causal LM from a local folder (never the network), in ``dtype`` on ``device``, in eval mode; with
    ``adapter``, a PEFT adapter folder on top, unmerged and trainable (its ``lora_*`` gradients are captured)."""
    from transformers import AutoModelForCausalLM  # heavy: transformers
    from transformers.utils import logging as hf_logging  # heavy: transformers

    hf_logging.disable_progress_bar()  # progress is ours to report, on our channel

    kwargs: dict[str, Any] = {"dtype": torch_dtype(dtype), "local_files_only": True}
    if attn:
        kwargs["attn_implementation"] = hf_implementation(attn)
    try:
        model = AutoModelForCausalLM.from_pretrained(str(model_dir), **kwargs)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot load a causal LM from {model_dir}: {str(exc).splitlines()[0]}") from None
    if adapter is not None:
        model = _with_adapter(model, Path(adapter))
    # transformers wraps PreTrainedModel.to in a decorator its types read as unbound: the call is right
    return model.to(device).eval()  # type: ignore[arg-type]


def _with_adapter(model, adapter: Path):
    if not (adapter / "adapter_config.json").is_file():
        raise UserError(f"{adapter} is not a PEFT adapter folder (no adapter_config.json)")
    try:
        from peft import PeftModel  # heavy: peft
    except ImportError:
        raise UserError("--adapter needs the peft package (pip install peft)") from None
    try:
        return PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise UserError(f"cannot load the adapter {adapter}: {str(exc).splitlines()[0]}") from None


def model_fingerprint(model_dir: Path, adapter: Path | None = None) -> dict[str, Any]:
    """Name and hashes of the model folder (and of the adapter, when one is loaded on top)."""
    out: dict[str, Any] = {"name": model_dir.name, "config_hash": config_hash(model_dir),
                           "weights_hash": weights_hash(model_dir)}
    if adapter is not None:
        out["adapter"] = {"name": Path(adapter).name, "weights_hash": weights_hash(adapter)}
    return out


def capture_model(
    model_dir: str | Path, *, dtype: str = "fp32", device: str = "auto", seed: int = 0, batch: int = 2,
    seq: int = 32, layers: list[str] | None = None, inputs_from: dict | None = None,
    perturb: dict[str, float] | None = None, attn: str | None = None, progress: ProgressFn | None = None,
    on_device: bool = False, backward=None, perturb_grad: dict[str, float] | None = None, adapter: Path | None = None,
    sink=None, compact: int = 0,
) -> tuple[dict, dict]:
    """Run the model once with hooks. Returns (tensors for the file, metadata dict).

    ``inputs_from`` (a dict of CPU tensors, e.g. a reference capture's inputs) replaces the seeded inputs.
    ``on_device`` leaves the module outputs on the run's device (for comparing there); inputs are on the CPU.
    ``backward`` (a ``backward.BackwardSpec``) adds a backward pass of its loss and the ``grad/*`` tensors
    (see ``backward``); ``perturb_grad`` gives named modules a slightly wrong backward (a demo fault).
    ``sink`` (a ``capture_stream.CaptureSink``) writes the module outputs while the pass runs; the returned
    host tensors are complete once ``sink.finish`` (or ``drain``) has returned. ``compact`` (a size, 0: off)
    stores each module output larger than it as a count sketch of that many values (``sketch.count_sketch``;
    no ``sink`` then): files of a few MB, cosine and rel L2 estimated, per-element numbers lost.
    """
    if compact and sink is not None:
        raise ValueError("a compact capture sketches the outputs after the pass: it cannot be streamed")
    progress = progress or quiet
    model_dir = Path(model_dir)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    progress(Progress("fingerprint model"))
    fingerprint = model_fingerprint(model_dir, adapter)
    timings["hash_s"] = time.perf_counter() - t0
    device = pick_device(device)
    progress(Progress("load model"))
    t0 = time.perf_counter()
    model = load_model(model_dir, dtype, device, attn, adapter)
    timings["load_s"] = time.perf_counter() - t0
    names = select_modules(model, layers)
    if inputs_from is not None:
        inputs = {k: v for k, v in inputs_from.items()}
    else:
        inputs = make_inputs(model.config.vocab_size, seed, batch, seq)

    with kernel_context(attn):
        captured, order, grads, rows, loss_value, timings = _run(
            model, names, inputs, device, perturb, perturb_grad, backward, progress, on_device or bool(compact),
            timings, sink)

    forms: dict[str, dict] = {}
    if compact:  # sketched where they were computed, then to the host (unless asked to stay there)
        captured, forms = sketch.count_sketch_named(captured, compact)
        if not on_device:
            captured, grads = host_copy(captured), host_copy(grads)
    tensors = {f"input/{k}": v.detach().cpu().contiguous() for k, v in inputs.items()}
    tensors.update({f"output/{n}": captured[n] for n in order})
    tensors.update(grads)
    meta = {
        "format": FORMAT, "kind": "model", **environment(device), "dtype": canonical_dtype(dtype),
        "seed": seed if inputs_from is None else None, "batch": int(inputs["input_ids"].shape[0]),
        "seq": int(inputs["input_ids"].shape[1]), "model": fingerprint,
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "perturb": perturb or None, "attn": attn,
        "modules": [{"name": n, "order": i, "shape": list(captured[n].shape), "dtype": str(captured[n].dtype).removeprefix("torch."),
                     **forms.get(n, {})} for i, n in enumerate(order)],
        "output_sketch": int(compact),
        "timings": {k: round(v, 4) for k, v in timings.items()},
    }
    if backward is not None:
        meta["backward"] = {**backward.as_dict(), "loss_value": loss_value, "perturb_grad": perturb_grad or None,
                            "grads": [{**row, "order": i, "shape": list(grads[row["key"]].shape)}
                                      for i, row in enumerate(rows)]}
    missing = [n for n in names if n not in captured]
    if missing:
        meta["not_called"] = missing
    return tensors, meta


def _run(model, names, inputs, device, perturb, perturb_grad, backward, progress, on_device, timings, sink=None):
    """The hooked pass: forward only, or forward and backward (``backward.run_backward``)."""
    if backward is not None:

        captured, order, grads, rows, loss_value, timings["forward_backward_s"] = run_backward(
            model, names, inputs, device, backward, perturb=perturb, perturb_grad=perturb_grad, progress=progress,
            to_host=not on_device, sink=sink)
        return captured, order, grads, rows, loss_value, timings
    if perturb_grad:
        raise UserError("--perturb-grad changes only the backward pass: add --backward")
    captured, order, timings["forward_s"] = run_hooked(model, names, inputs, device, perturb, progress,
                                                       to_host=not on_device, sink=sink)
    return captured, order, {}, [], None, timings


def run_hooked(model, names: list[str], inputs: dict, device: str, perturb: dict[str, float] | None = None,
               progress: ProgressFn | None = None, to_host: bool = True, sink=None) -> tuple[dict, list[str], float]:
    """One forward pass with capture hooks on ``names``. Returns (outputs, execution order, seconds);
    the outputs are on the CPU, or left on ``device`` when ``to_host`` is False; with ``sink`` (a
    ``capture_stream.CaptureSink``) each output goes to the host and the file as its module returns."""
    import torch  # heavy: torch

    progress = progress or quiet
    by_name = dict(model.named_modules())
    for target in perturb or {}:
        if target not in by_name:
            raise UserError(f"--perturb names {target!r}, which is not a module of this model")
    handles = []
    captured: dict[str, Any] = {}
    order: list[str] = []
    for target, scale in (perturb or {}).items():
        handles.append(by_name[target].register_forward_hook(perturbation_hook(scale)))

    def keep(name: str):
        def hook(_module, _args, output):
            first = output[0] if isinstance(output, tuple) else output
            if name not in captured:
                order.append(name)
            # Clone on the device (a later in-place op could overwrite the activation) and move everything
            # to the host after the pass: a per-hook device->host copy would stall the GPU at every module.
            kept = first.detach().clone()
            captured[name] = sink.put(f"output/{name}", kept) if sink is not None else kept
            progress(Progress("forward", len(order), len(names), name))
        return hook

    for name in names:
        handles.append(by_name[name].register_forward_hook(keep(name)))
    try:
        progress(Progress("forward", 0, len(names)))
        t0 = time.perf_counter()
        with torch.inference_mode():
            model(**{k: v.to(device) for k, v in inputs.items()}, use_cache=False)
        if to_host and sink is None:
            captured = host_copy(captured)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    finally:
        for h in handles:
            h.remove()
    return captured, order, seconds


_SAFETENSORS_TAGS = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
                     "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL"}


def tensor_entries(tensors: dict) -> dict[str, tuple[str, list[int], Any]]:
    """(dtype tag, shape, bytes buffer) per tensor, for ``write_tensor_file``; no copy for CPU tensors.

    A tensor's bytes are read in place through a uint8 view (bf16 included, which numpy cannot hold).
    """
    import torch  # heavy: torch

    entries = {}
    for name, t in tensors.items():
        t = t.detach()
        tag = _SAFETENSORS_TAGS.get(str(t.dtype).removeprefix("torch."))
        if tag is None:
            raise UserError(f"cannot store {name!r}: dtype {t.dtype} has no safetensors tag hipwizard reads")
        flat = t.to("cpu").contiguous().reshape(-1)
        entries[name] = (tag, list(t.shape), flat.view(torch.uint8).numpy())
    return entries


def write_capture(path: str | Path, tensors: dict, meta: dict) -> CaptureResult:
    """Serialise tensors + metadata to ``path`` atomically (never a half-written capture), in one pass."""

    t0 = time.perf_counter()
    size = write_tensor_file(path, tensor_entries(tensors), {META_KEY: json.dumps(meta)})
    write_s = time.perf_counter() - t0
    timings = dict(meta.get("timings", {}), write_s=round(write_s, 4))
    n = sum(1 for k in tensors if k.startswith("output/"))
    return CaptureResult(Path(path), size, n, timings, meta)


def read_inputs(path: str | Path) -> tuple[dict, dict]:
    """A capture's inputs as CPU torch tensors (in the dtype they were fed) and its metadata."""
    import torch  # heavy: torch


    tf = read_tensor_file(path)
    meta = read_meta(tf)
    inputs = {}
    for name, arr in tf.tensors.items():
        if name.startswith("input/"):
            t = torch.from_numpy(arr.copy())
            if tf.stored_dtypes[name] == "BF16":
                t = t.to(torch.bfloat16)  # widened exactly on read; narrowing back is exact too
            inputs[name[len("input/"):]] = t
    return inputs, meta
