"""Running a subject (a model or a harness) for the Parity step: capture it to a file, and the two
comparisons that run it (``services.compare`` picks the way; two files need no run, see ``compare``):

- re-run: ``compare REF --model DIR|--demo|--harness FILE`` feeds REF's stored inputs to this machine;
- same machine: ``compare --reference cpu --model DIR|--demo|--harness FILE`` captures a float64 CPU
  reference and the candidate dtype on the chosen device.
Fingerprints are checked before anything heavy loads, so a wrong model is refused in milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.parity.capture import sketch, step_batch
from hipwizard.parity.capture.backward import BackwardSpec
from hipwizard.parity.capture.fingerprint import config_hash, weights_hash
from hipwizard.parity.capture.harness import capture_harness
from hipwizard.parity.capture.model import CaptureResult, capture_model, pick_device, read_inputs, write_capture
from hipwizard.parity.capture.stream import CaptureSink
from hipwizard.parity.compare import metrics_torch
from hipwizard.parity.compare.captures import compare_captures, compare_files, output_sketch
from hipwizard.parity.compare.result import Comparison
from hipwizard.parity.requests import RunOptions, Subject
from hipwizard.parity.tensorfile import META_KEY, TensorFile, read_meta, read_tensor_file
from hipwizard.progress import Progress, ProgressFn, quiet


def backward_spec(opts: RunOptions, ref_meta: dict | None = None):
    """The ``backward.BackwardSpec`` of this run, or None for forward only. A re-run takes the reference's
    loss and weight selection (``ref_meta``), so both sides differentiate the very same loss."""
    theirs = (ref_meta or {}).get("backward") or {}
    if opts.backward is False or (opts.backward is None and not theirs):
        return None
    if theirs:
        # a capture from before the sketch has no sketch_rank: its ∂W are full, so ours must be too
        # (and one from before the count sketch has no count_size: its ∂out/∂in are whole)
        return BackwardSpec(loss=theirs.get("loss", "lm"), loss_seed=int(theirs.get("loss_seed", 0)),
                            weights=theirs.get("weights", "lora"), sketch_rank=int(theirs.get("sketch_rank") or 0),
                            count_size=int(theirs.get("count_size") or 0))
    return BackwardSpec(loss=opts.loss, loss_seed=opts.seed, weights=opts.grad_weights,
                        count_size=opts.grad_sketch)


def capture_subject(subject: Subject, opts: RunOptions, out: Path, *, inputs_from: dict | None = None,
                    progress: ProgressFn | None = None, ref_meta: dict | None = None) -> CaptureResult:
    """Run ``subject`` once with hooks (``opts.dtype`` None: fp32) and write the capture to ``out``."""
    progress = progress or quiet
    dtype = opts.dtype or "fp32"
    if inputs_from is None and opts.inputs:
        inputs_from = step_batch.read_inputs(Path(opts.inputs))

    if subject.harness is not None:
        if opts.backward:
            raise UserError("--backward works with a model (--model/--demo), not with a harness")
        tensors, meta = capture_harness(subject.harness, dtype=dtype, device=opts.device, seed=opts.seed,
                                        inputs_from=inputs_from, progress=progress)
        _before_write(meta, opts, progress)
        return write_capture(out, tensors, meta)

    model_dir = subject.resolve_model(progress)
    device = pick_device(opts.device)
    # On the CPU the outputs reach the file while the model runs (the pass runs in torch's threads, the disk
    # in ours: 10% less wall time on the small benchmark model). On a GPU the pass is bound by the Python
    # thread launching kernels, and a writer thread competing for the interpreter made the capture slower
    # on the H200 (docs/parity.md): there the file is written after the pass.
    compact = output_sketch(ref_meta) if ref_meta else (sketch.COUNT_SIZE if opts.compact else 0)
    sink = CaptureSink(out) if device == "cpu" and not compact else None
    with sink if sink is not None else contextlib.nullcontext():
        tensors, meta = capture_model(
            model_dir, dtype=dtype, device=device, seed=opts.seed,
            batch=opts.batch, seq=opts.seq, layers=opts.layers, inputs_from=inputs_from,
            perturb=opts.perturb or None, attn=opts.attn, progress=progress,
            backward=backward_spec(opts, ref_meta), perturb_grad=opts.perturb_grad or None, adapter=subject.adapter,
            sink=sink, compact=compact,
        )
        _before_write(meta, opts, progress)
        if sink is None:
            return write_capture(out, tensors, meta)
        t0 = time.perf_counter()
        size = sink.finish(tensors, meta)
    meta["timings"]["write_s"] = round(time.perf_counter() - t0, 4)  # what was left to write after the pass
    return CaptureResult(Path(out), size, sum(1 for k in tensors if k.startswith("output/")), meta["timings"], meta)


def _before_write(meta: dict, opts: RunOptions, progress: ProgressFn) -> None:
    if opts.environment:
        meta["environment"] = opts.environment  # the machine it was captured on (doctor.fingerprint)
    progress(Progress("write capture"))


def check_fingerprint(ref_meta: dict, model_dir: Path, adapter: Path | None = None) -> None:
    """Refuse to re-run a reference captured from another model or adapter (cheap: hashes files, no torch)."""
    want = ref_meta.get("model") or {}
    want_adapter = want.get("adapter") or {}
    if want_adapter and adapter is None:
        raise UserError(f"the reference was captured with the adapter {want_adapter.get('name')!r} on top of the "
                        "model: pass it with --adapter DIR")
    if adapter is not None:
        have = weights_hash(adapter)
        if not want_adapter:
            raise UserError("the reference was captured without an adapter: drop --adapter, or capture the "
                            "reference with it")
        if want_adapter.get("weights_hash") and want_adapter["weights_hash"] != have:
            raise UserError(f"{adapter} is not the adapter the reference was captured with: weights hash {have} "
                            f"here, {want_adapter['weights_hash']} in the reference")
    for key, fn, what in (("config_hash", config_hash, "config"), ("weights_hash", weights_hash, "weights")):
        have = fn(model_dir)
        if want.get(key) and want[key] != have:
            raise UserError(
                f"{model_dir} is not the model the reference was captured from: {what} hash {have} here, "
                f"{want[key]} in the reference; both sides need the very same model folder"
            )


def compare_rerun(ref: Path, subject: Subject, opts: RunOptions, *, keep: Path | None = None,
                  progress: ProgressFn | None = None, ref_run: Path | None = None, **compare_kwargs) -> Comparison:
    """Feed the reference's stored inputs to ``subject`` on this machine and compare per module
    (``opts.dtype`` None: the reference's dtype, or ``ref_run``'s when given). Gradients are compared when
    the reference holds them (``opts.backward`` None) or when asked (True: the reference must hold them).

    A model's outputs are compared where they were computed (``metrics_torch``: on the GPU with
    ``--device cuda``), without a round trip through a file; ``keep`` still writes the candidate capture.
    """
    progress = progress or quiet
    ref_meta = read_meta(ref)
    run_meta = read_meta(ref_run) if ref_run is not None else {}
    dtype = str(opts.dtype or run_meta.get("dtype") or ref_meta.get("dtype") or "fp32")
    opts = replace(opts, dtype=dtype)
    if opts.backward and not ref_meta.get("backward"):
        raise UserError(f"--backward asked for, but the reference capture {Path(ref).name} holds no gradients "
                        "(captured without --backward): capture it again with --backward")
    if subject.harness is None:
        if ref_meta.get("kind") != "model":
            raise UserError(f"{ref} is a harness capture: compare it with --harness FILE.py")
        model_dir = subject.resolve_model(progress)
        check_fingerprint(ref_meta, model_dir, subject.adapter)
        subject = Subject(model=model_dir, adapter=subject.adapter)
        opts = replace(opts, layers=[m["name"] for m in ref_meta.get("modules", [])] or None)
    elif ref_meta.get("kind") != "harness":
        raise UserError(f"{ref} is a model capture: compare it with --model DIR")
    inputs, _meta = read_inputs(ref)
    if subject.harness is None and "input_ids" not in inputs:
        raise UserError(f"{ref} holds no input_ids: it cannot be re-run")
    if subject.harness is None:
        return _compare_model_on_device(ref, model_dir, dtype, subject, opts, inputs, keep, progress,
                                        dict(compare_kwargs, ref_run=ref_run), ref_meta)
    with _capture_dir(keep) as folder:
        t0 = time.perf_counter()
        cand = capture_subject(subject, opts, folder / "candidate.safetensors", inputs_from=inputs, progress=progress)
        capture_s = time.perf_counter() - t0
        progress(Progress("compare"))
        result = compare_files(ref, cand.path, ref_run=ref_run, **compare_kwargs)
    result.timings.update(candidate_capture_s=round(capture_s, 4), candidate_bytes=cand.bytes)
    return result


def _compare_model_on_device(ref: Path, model_dir: Path, dtype: str, subject: Subject, opts: RunOptions, inputs: dict,
                             keep: Path | None, progress: ProgressFn, compare_kwargs: dict,
                             ref_meta: dict) -> Comparison:
    """Re-run the model in ``model_dir`` (resolved) in ``dtype`` on the reference's inputs and compare on the
    device the outputs are on."""

    t0 = time.perf_counter()
    tensors, meta = capture_model(model_dir, dtype=dtype, device=opts.device, seed=opts.seed, batch=opts.batch,
                                  seq=opts.seq, layers=opts.layers, inputs_from=inputs, perturb=opts.perturb or None,
                                  attn=opts.attn, progress=progress, on_device=True,
                                  backward=backward_spec(opts, ref_meta), perturb_grad=opts.perturb_grad or None,
                                  adapter=subject.adapter, compact=output_sketch(ref_meta))
    capture_s = time.perf_counter() - t0
    timings: dict = {"candidate_capture_s": round(capture_s, 4)}
    cand_path = Path(f"{model_dir.name} on {meta['device']} (this run)")
    if keep is not None:
        progress(Progress("write capture"))
        written = write_capture(Path(keep) / "candidate.safetensors", tensors, meta)
        cand_path, timings["candidate_bytes"] = written.path, written.bytes
    progress(Progress("compare"))
    # bf16 stays undecoded: the torch metrics copy half the bytes to the device and widen there
    ref_tf = read_tensor_file(ref, decode_bf16=False)
    # the candidate's inputs are the reference's own (CPU tensors); its outputs stay where they were computed
    cand_tensors = {k: (v.numpy() if k.startswith("input/") and not v.is_floating_point() else v)
                    for k, v in tensors.items()}
    cand_tf = TensorFile(cand_path, cand_tensors, {}, {META_KEY: json.dumps(meta)})
    ref_run = compare_kwargs.pop("ref_run", None)
    run_tf = read_tensor_file(ref_run, decode_bf16=False) if ref_run else None
    # on a GPU the references go over in one copy each and are compared there with the candidate
    ref_up = metrics_torch.upload(ref_tf, meta["device"])
    run_up = metrics_torch.upload(run_tf, meta["device"]) if run_tf is not None else None
    result = compare_captures(ref_up, cand_tf, metric=metrics_torch.metric_for(meta["device"]),
                              backward=opts.backward, ref_run=run_up, **compare_kwargs)
    result.timings.update(timings)
    return result


def compare_same_machine(subject: Subject, opts: RunOptions, *, keep: Path | None = None,
                         progress: ProgressFn | None = None, **compare_kwargs) -> Comparison:
    """float64 reference on the CPU vs ``opts.dtype`` (None: fp32) on ``opts.device``, same inputs, same modules;
    ``opts.backward`` adds the gradients, ``opts.triangle`` the reference in ``opts.dtype`` on the CPU too."""
    progress = progress or quiet
    opts = replace(opts, dtype=opts.dtype or "fp32")
    ref_opts = RunOptions(dtype="fp64", device="cpu", seed=opts.seed, batch=opts.batch, seq=opts.seq,
                          layers=opts.layers, attn=opts.attn if opts.attn in ("eager", "sdpa") else None,
                          backward=bool(opts.backward), loss=opts.loss,
                          grad_weights=opts.grad_weights, grad_sketch=opts.grad_sketch, inputs=opts.inputs,
                          compact=opts.compact)
    opts = replace(opts, backward=bool(opts.backward))
    if subject.demo:
        subject = Subject(model=subject.resolve_model(progress))
    with _capture_dir(keep) as folder:
        t0 = time.perf_counter()
        progress(Progress("reference (fp64, cpu)"))
        ref = capture_subject(subject, ref_opts, folder / "reference.safetensors", progress=progress)
        t1 = time.perf_counter()
        progress(Progress(f"candidate ({opts.dtype}, {opts.device})"))
        cand = capture_subject(subject, opts, folder / "candidate.safetensors", progress=progress)
        t2 = time.perf_counter()
        run = None
        if opts.triangle:
            progress(Progress(f"reference ({opts.dtype}, cpu)"))
            run = capture_subject(subject, replace(ref_opts, dtype=opts.dtype), folder / "reference-run.safetensors",
                                  progress=progress).path
        progress(Progress("compare"))
        result = compare_files(ref.path, cand.path, ref_run=run, **compare_kwargs)
    result.timings.update(reference_capture_s=round(t1 - t0, 4), candidate_capture_s=round(t2 - t1, 4),
                          reference_bytes=ref.bytes, candidate_bytes=cand.bytes)
    return result


class _capture_dir:
    """``keep`` (created) when given, else a temporary folder removed afterwards."""

    def __init__(self, keep: Path | None):
        self.keep = Path(keep) if keep else None
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Path:
        if self.keep is not None:
            self.keep.mkdir(parents=True, exist_ok=True)
            return self.keep
        self._tmp = tempfile.TemporaryDirectory(prefix="hipwizard-parity-")
        return Path(self._tmp.name)

    def __exit__(self, *exc) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
