"""Gradient capture: one forward and one backward pass of a fixed seeded scalar loss, with hooks.

On the same seeded batch as the forward capture, the loss is either the LM loss (next-token cross-entropy
of the logits against the batch's own ids, in float32) or a seeded projection of the logits
(Σ logits·R / √n with R drawn from a seeded CPU generator: identical on every machine). The pass records,
for each selected module:

- ``grad/out/<module>``: the gradient reaching the module's output (what its backward receives);
- ``grad/w/<parameter>``: the gradient of its trainable weights (``weights``: ``lora`` the LoRA targets —
  parameters named ``lora_*`` when the model has them, else the ``q_proj``/``v_proj`` weights, PEFT's default
  for Llama — stored as a rank-``sketch_rank`` sketch (``sketch``: what a LoRA's B and A would receive;
  ~r/in of the size); ``lora-full`` the same weights' full gradients; ``all`` every parameter of the module,
  full; or ``none``);
- ``grad/in/<module>``: the gradient its backward hands to its input (what it computed).

``∂out`` and ``∂in`` are stored as count sketches (``sketch.count_sketch``: 8,192 float64 values whose rel L2
and cosine estimate the full tensor's to ~1%) unless ``count_size`` is 0 (``--grad-elements``): every element,
at ~20x the bytes of a sketched capture, for the per-element numbers (max |Δ|, worst elements).

Rows go in backward execution order (the last module first; for each: received, weights, handed on), so the
first row that diverges names the module whose backward is wrong: its ∂out still matches, its ∂in does not.
All gradients come from one ``torch.autograd.grad`` call on exactly these tensors (no other weight gradient
is computed). torch is imported inside the functions.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

from hipwizard.errors import UserError
from hipwizard.parity.capture import sketch
from hipwizard.parity.capture.sketch import DEFAULT_RANK
from hipwizard.parity.capture.tensors import host_copy, perturbation_hook
from hipwizard.progress import Progress, ProgressFn, quiet

LOSSES = ("lm", "projection")
WEIGHT_CHOICES = ("lora", "lora-full", "all", "none")
LORA_DEFAULT_TARGETS = ("q_proj", "v_proj")
GRAD_PREFIX = "grad/"
ROW_PREFIX = {"out": "∂out ", "w": "∂W ", "in": "∂in "}


@dataclass(frozen=True)
class BackwardSpec:
    """Which loss, seeded how, and which weights' gradients to keep."""

    loss: str = "lm"
    loss_seed: int = 0
    weights: str = "lora"
    sketch_rank: int | None = None  # None: the default of ``weights`` (a sketch for lora, else 0 = full)
    count_size: int | None = None  # ∂out/∂in as count sketches of this size; None: the default; 0: every element

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise UserError(f"unknown --loss {self.loss!r} (choose {', '.join(LOSSES)})")
        if self.weights not in WEIGHT_CHOICES:
            raise UserError(f"unknown --grad-weights {self.weights!r} (choose {', '.join(WEIGHT_CHOICES)})")
        if self.sketch_rank is None:
            object.__setattr__(self, "sketch_rank", DEFAULT_RANK if self.weights == "lora" else 0)
        count = sketch.COUNT_SIZE if self.count_size is None else self.count_size
        object.__setattr__(self, "count_size", count)
        if count < 0:
            raise UserError(f"the count sketch size must be 0 (every element) or positive, not {count}")

    @property
    def rank(self) -> int:
        """``sketch_rank`` as resolved on construction (never None after it)."""
        return self.sketch_rank or 0

    @property
    def count(self) -> int:
        """``count_size`` as resolved on construction (never None after it)."""
        return self.count_size or 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def row_name(kind: str, name: str) -> str:
    """The table's name of a gradient row: '∂out model.layers.0.mlp', '∂W ….q_proj.weight'."""
    return ROW_PREFIX[kind] + name


def weight_params(model, module_name: str, module, weights: str) -> list[tuple[str, Any]]:
    """(full name, parameter) of ``module``'s trainable weights to record under ``weights``."""
    if weights == "none":
        return []
    params = [(f"{module_name}.{n}", p) for n, p in module.named_parameters() if p.requires_grad]
    if weights == "all":
        return params  # lora and lora-full: the same parameters (stored as a sketch or whole)
    lora = [(n, p) for n, p in params if ".lora_" in n]
    if lora or any(".lora_" in n for n, _p in model.named_parameters()):
        return lora
    return [(n, p) for n, p in params if n.rsplit(".", 2)[-2] in LORA_DEFAULT_TARGETS]


def wrong_backward_hook(scale: float, seed: int = 4321):
    """A forward hook passing the module's output through a custom autograd Function whose forward is the
    identity and whose backward adds seeded noise of relative size ``scale`` to the gradient: a kernel with a
    slightly wrong backward. The forward is bit-identical, so only gradient parity can see it."""
    import torch  # heavy: torch

    class WrongBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            gen = torch.Generator(device="cpu").manual_seed(seed)
            noise = torch.randn(grad.shape, generator=gen, dtype=torch.float32).to(grad.device, grad.dtype)
            return grad + noise * (grad.float().std() * scale).to(grad.dtype)

    def hook(_module, _args, output):
        first = output[0] if isinstance(output, tuple) else output
        wrapped = WrongBackward.apply(first)
        return (wrapped, *output[1:]) if isinstance(output, tuple) else wrapped

    return hook


def wrong_gradient(scale: float, seed: int = 4321):
    """A tensor hook for a parameter: its gradient plus seeded noise of relative size ``scale`` (a wrong
    weight-gradient kernel whose forward and input gradient are right)."""
    import torch  # heavy: torch

    def hook(grad):
        gen = torch.Generator(device="cpu").manual_seed(seed)
        noise = torch.randn(grad.shape, generator=gen, dtype=torch.float32).to(grad.device, grad.dtype)
        return grad + noise * (grad.float().std() * scale).to(grad.dtype)

    return hook


def scalar_loss(logits, input_ids, spec: BackwardSpec):
    """The fixed scalar loss of ``spec`` on ``logits`` (float32 math whatever the run's dtype)."""
    import torch  # heavy: torch
    import torch.nn.functional as F  # heavy: torch

    z = logits.float()
    if spec.loss == "lm":
        if z.shape[1] < 2:
            raise UserError("--loss lm needs --seq of at least 2 (next-token targets); use --loss projection")
        ids = input_ids.to(z.device)
        return F.cross_entropy(z[:, :-1].reshape(-1, z.shape[-1]), ids[:, 1:].reshape(-1))
    gen = torch.Generator(device="cpu").manual_seed(spec.loss_seed)
    proj = torch.randn(z.shape, generator=gen, dtype=torch.float32).to(z.device)
    return (z * proj).sum() / math.sqrt(z.numel())


def _first_tensor(args, kwargs):
    import torch  # heavy: torch

    for value in (*args, kwargs.get("hidden_states"), kwargs.get("input"), *kwargs.values()):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value
    return None


def _sketch_rows(rows: list[dict], grads: list, spec: BackwardSpec) -> list[dict]:
    """Replace, in place in ``grads``, the gradients ``spec`` stores as sketches (LoRA-target ∂W as rank-r
    sketches, ∂out/∂in larger than the count sketch as count sketches), batched by shape; returns the rows
    with their ``form`` and ``full_shape`` recorded."""
    rank = [i for i, (row, g) in enumerate(zip(rows, grads, strict=True)) if row["kind"] == "w" and sketch.applies(g.shape, spec.rank)]
    count = [i for i, (row, g) in enumerate(zip(rows, grads, strict=True)) if row["kind"] != "w" and 0 < spec.count < g.numel()]
    rows = list(rows)
    for chosen, form, many in ((rank, f"sketch r{spec.rank}", lambda gs: sketch.sketch_many(gs, spec.rank)),
                               (count, sketch.count_form(spec.count),
                                lambda gs: sketch.count_sketch_many(gs, spec.count))):
        for i, small in zip(chosen, many([grads[i] for i in chosen]) if chosen else [], strict=True):
            rows[i] = {**rows[i], "form": form, "full_shape": list(grads[i].shape)}
            grads[i] = small
    return rows


def run_backward(model, names: list[str], inputs: dict, device: str, spec: BackwardSpec, *,
                 perturb: dict[str, float] | None = None, perturb_grad: dict[str, float] | None = None,
                 progress: ProgressFn | None = None, to_host: bool = True, sink=None):
    """One hooked forward and backward pass. Returns (outputs, forward order, gradients, gradient rows,
    loss value, seconds): outputs by module name; gradients by tensor key (``grad/out/…``); rows as
    [{"name", "key", "module", "kind"}] in backward order. On the CPU unless ``to_host`` is False; with
    ``sink`` (``capture_stream.CaptureSink``) the outputs reach the file during the pass."""
    import torch  # heavy: torch


    progress = progress or quiet
    by_name = dict(model.named_modules())
    params = dict(model.named_parameters())
    for target in perturb or {}:
        if target not in by_name:
            raise UserError(f"--perturb names {target!r}, which is not a module of this model")
    for target in perturb_grad or {}:
        if target not in by_name and target not in params:
            raise UserError(f"--perturb-grad names {target!r}, which is neither a module nor a parameter of this model")
    outputs: dict[str, Any] = {}
    order: list[str] = []
    seen_out: dict[str, Any] = {}
    seen_in: dict[str, Any] = {}
    handles = [by_name[t].register_forward_hook(perturbation_hook(s)) for t, s in (perturb or {}).items()]
    # a module: a wrong backward through it; a parameter: a wrong weight gradient only (nothing else changes)
    handles += [by_name[t].register_forward_hook(wrong_backward_hook(s)) if t in by_name
                else params[t].register_hook(wrong_gradient(s)) for t, s in (perturb_grad or {}).items()]

    def keep(name: str):
        def hook(_module, args, kwargs, output):
            first = output[0] if isinstance(output, tuple) else output
            if name not in outputs:
                order.append(name)
            kept = first.detach().clone()
            outputs[name] = sink.put(f"output/{name}", kept) if sink is not None else kept
            seen_out[name] = first
            x = _first_tensor(args, kwargs)
            if x is not None and x.requires_grad:
                seen_in[name] = x
            progress(Progress("forward", len(order), len(names), name))
        return hook

    for name in names:
        handles.append(by_name[name].register_forward_hook(keep(name), with_kwargs=True))
    try:
        t0 = time.perf_counter()
        with torch.enable_grad():
            ids = inputs["input_ids"]
            out = model(**{k: v.to(device) for k, v in inputs.items()}, use_cache=False)
            loss = scalar_loss(out.logits, ids, spec)
            progress(Progress("backward"))
            rows, targets = [], []
            for name in reversed(order):
                entries = [("out", name, seen_out.get(name))]
                entries += [("w", pname, p) for pname, p in weight_params(model, name, by_name[name], spec.weights)]
                entries.append(("in", name, seen_in.get(name)))
                for kind, label, tensor in entries:
                    if tensor is None or not tensor.requires_grad:
                        continue
                    rows.append({"name": row_name(kind, label), "key": f"{GRAD_PREFIX}{kind}/{label}", "module": name,
                                 "kind": kind})
                    targets.append(tensor)
            unique = list({id(t): t for t in targets}.values())  # the norm's output is the lm_head's input
            grads = torch.autograd.grad(loss, unique, allow_unused=True) if unique else ()
        by_id = {id(t): g for t, g in zip(unique, grads, strict=True)}
        kept, found = [], []
        for row, tensor in zip(rows, targets, strict=True):
            g = by_id.get(id(tensor))
            if g is not None:
                kept.append(row)
                found.append(g.detach())
        kept = _sketch_rows(kept, found, spec)
        gradients: dict[str, Any] = {row["key"]: g for row, g in zip(kept, found, strict=True)}
        if to_host and sink is not None:
            gradients = host_copy(gradients)  # the outputs are on their way already
        elif to_host:
            both = host_copy({**{f"output/{n}": t for n, t in outputs.items()}, **gradients})
            outputs = {n: both[f"output/{n}"] for n in outputs}
            gradients = {k: both[k] for k in gradients}
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    finally:
        for h in handles:
            h.remove()
    return outputs, order, gradients, kept, float(loss.detach()), seconds
