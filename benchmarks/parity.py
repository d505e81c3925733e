"""Parity capture+compare cost against bare forward passes of the same model, measured in the same run.

    python benchmarks/parity.py [--size tiny|small|medium] [--device cpu|cuda|auto] [--dtype bf16|fp32] [--repeat N]

Builds a Llama-shaped model with seeded random weights in a temporary folder (no download), loads it
once, then times, on the same inputs:
  forward     bare forward passes (no hooks), median of --repeat
  hooked      the capture pass (hooks clone each module output, then one copy to the host), median
  write       the one-pass atomic write of the capture file, against a plain write+fsync of as many bytes and
              against the previous way (safetensors.torch.save to one bytes object, then the atomic write)
  compare     on device: the re-run path (`compare REF --model DIR --device D`): read REF, compare with the
              candidate outputs still on the device (torch, float64)
              two files: read both captures, numpy one-pass metrics, against the previous whole-array numpy
  stream      the CLI's capture: the hooked pass with each output written to the file as its module returns
              (capture_stream), then the rest of the file
and prints the ratios. All timings interleaved, median of --repeat. Target (issue 5): capture+compare within
2x the forward passes plus the file write at disk speed: stream + compare(device) <= 2 x forward + plain write
(hooked + write + compare, the pass and the write one after the other, is printed beside it).

With --backward, the same for the forward + backward pass (issue 17), interleaved with the rest:
  fwd+bwd     bare: forward, the LM loss, loss.backward() (every weight gradient, as training computes them)
  hooked f+b  the gradient capture (outputs, ∂out/∂in of every hooked module as count sketches unless
              --grad-sketch 0, ∂W of the LoRA targets as rank-16 sketches), to host
  write f+b   the atomic write of that capture
  stream f+b  the CLI's gradient capture: outputs streamed to the file during the pass, then the gradients
  compare f+b on device: the re-run path with the gradients still on the device
Target (issue 17): stream f+b + compare f+b <= 3 x bare fwd+bwd (and, as printed too, against
3 x bare fwd+bwd + the plain write of as many bytes, the forward target's form).

With --backward --lean, in the same interleaved rounds (issue 34 item 3), before vs after:
  before      the default f+b capture (every module output whole, ∂out/∂in count-sketched, ∂W rank-16 sketches),
              written (streamed on the CPU), then the re-run compare (candidate in memory, never written)
  after       every row sketched (--compact's form: what `compare --lean` holds), written, then the re-run
              compare of the sketches; `compare --lean` writes nothing at all on one machine and re-runs whole
              only the rows the triangle flags (none for a correct model: the flag test is a loop over the rows)
  product     `compare --reference cpu --triangle --backward` against the same with --lean, end to end (model
              loads, the three captures, the files the full one writes), the verdict of every row side by side
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

SIZES = {
    # hidden, intermediate, layers, heads, kv heads, vocab
    "tiny": (64, 172, 2, 4, 2, 512),
    "small": (512, 1376, 8, 8, 4, 32000),
    "medium": (2048, 5504, 16, 16, 8, 32000),
}


def build_model(folder: Path, size: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    h, i, n, a, kv, vocab = SIZES[size]
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=h, intermediate_size=i, num_hidden_layers=n, num_attention_heads=a,
                         num_key_value_heads=kv, vocab_size=vocab, max_position_embeddings=2048)
    LlamaForCausalLM(config).save_pretrained(folder, safe_serialization=True)


def legacy_metrics(ref, cand, tol):
    """The metrics as computed before the one-pass rewrite (whole-array float64 numpy), as the peer."""
    import numpy as np

    from hipwizard.parity.compare.metrics import HIST_DECADES, WORST_COUNT
    from hipwizard.parity.compare.result import Metrics

    r = np.asarray(ref, dtype=np.float64).ravel()
    c = np.asarray(cand, dtype=np.float64).ravel()
    int(np.isnan(c).sum() + np.isnan(r).sum()), int(np.isinf(c).sum() + np.isinf(r).sum())
    diff = c - r
    absd = np.abs(diff)
    rn, cn, dn = (float(np.linalg.norm(x)) for x in (r, c, diff))
    cosine = float(np.dot(r, c) / (rn * cn)) if rn and cn else 1.0
    outside = float((absd > (tol.atol + tol.rtol * np.abs(r))).mean())
    lo, hi = HIST_DECADES[0], HIST_DECADES[-1]
    with np.errstate(divide="ignore"):
        decades = np.floor(np.log10(absd[absd > 0]))
    np.bincount(np.clip(decades - lo + 1, 0, hi - lo + 1).astype(np.int64), minlength=hi - lo + 2)
    k = min(WORST_COUNT, absd.size)
    flat = np.argpartition(-absd, k - 1)[:k]
    flat[np.argsort(-absd[flat], kind="stable")]
    return Metrics(cosine=cosine, max_abs=float(absd.max()), rel_l2=dn / rn if rn else 0.0, outside_share=outside,
                   nan_count=0, inf_count=0, verdict="pass")


def legacy_write(path, tensors, meta):
    """The capture write before the one-pass writer: serialise to one bytes object, then write it."""
    from safetensors.torch import save

    from hipwizard.atomic import atomic_write_bytes

    atomic_write_bytes(path, save(tensors, metadata={"hipwizard": json.dumps(meta)}))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="small")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp16"))
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.add_argument("--backward", action="store_true", help="also time the forward+backward capture (issue 17)")
    p.add_argument("--compact", action="store_true", help="module outputs as count sketches too (capture --compact)")
    p.add_argument("--lean", action="store_true", help="with --backward: before vs after (issue 34), see above")
    p.add_argument("--no-product", action="store_true", help="with --lean: leave out the end-to-end product runs")
    p.add_argument("--grad-sketch", type=int, default=None, metavar="N",
                   help="∂out/∂in as count sketches of N values (default: the capture's default, 8192); 0: every element")
    args = p.parse_args(argv)

    import torch

    from hipwizard.parity.capture.model import (
        environment,
        load_model,
        make_inputs,
        pick_device,
        run_hooked,
        select_modules,
        write_capture,
    )
    from hipwizard.parity.compare import metrics_torch
    from hipwizard.parity.compare.captures import compare_captures
    from hipwizard.parity.tensorfile import META_KEY, TensorFile, read_tensor_file

    device = pick_device(args.device)
    cuda = device.startswith("cuda")
    if args.compact:  # the passes as capture_model(compact=...) runs them: sketched on the device, then to the host
        from hipwizard.parity.capture.backward import run_backward

        run_hooked, _backward_bench.run = _compacted(run_hooked), _compacted(run_backward)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def timed(fn, *a, **kw):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        sync()
        return time.perf_counter() - t0, out

    with tempfile.TemporaryDirectory(prefix="hipwizard-bench-") as tmp:
        tmp = Path(tmp)
        build_model(tmp / "model", args.size)
        model = load_model(tmp / "model", args.dtype, device)
        names = select_modules(model, None)
        inputs = make_inputs(model.config.vocab_size, 0, args.batch, args.seq)
        on_device = {k: v.to(device) for k, v in inputs.items()}

        def bare() -> None:
            with torch.inference_mode():
                model(**on_device, use_cache=False)

        bare(), run_hooked(model, names, inputs, device)  # warm-up: kernels, allocator, caches
        captured, order, _s = run_hooked(model, names, inputs, device)
        tensors = {f"input/{k}": v for k, v in inputs.items()}
        tensors.update({f"output/{n}": captured[n] for n in order})
        form = {"form": "count-sketch 8192"} if args.compact else {}
        meta = {"format": "hipwizard-parity/1", "kind": "model", **environment(device), "dtype": args.dtype,
                "output_sketch": 8192 if args.compact else 0,
                "modules": [{"name": n, "order": i, "shape": list(captured[n].shape), **form} for i, n in enumerate(order)]}
        a = write_capture(tmp / "a.safetensors", tensors, meta)
        write_capture(tmp / "b.safetensors", tensors, meta)
        blob = os.urandom(a.bytes)

        def plain() -> None:  # the disk's speed for the same number of bytes
            with open(tmp / "plain.bin", "wb") as fh:
                fh.write(blob)
                fh.flush()
                os.fsync(fh.fileno())

        def device_compare(cand_outputs):
            # as runs.compare_rerun reads it: bf16 undecoded, moved to the device in one copy
            ref = metrics_torch.upload(read_tensor_file(tmp / "a.safetensors", decode_bf16=False), device)
            cand = TensorFile(Path("this run"), {**{f"input/{k}": v.numpy() for k, v in inputs.items()},
                                                  **{f"output/{n}": t for n, t in cand_outputs.items()}},
                              {}, {META_KEY: json.dumps(meta)})
            return compare_captures(ref, cand, metric=metrics_torch.metric_for(device))  # what the CLI uses

        def files_compare(metric):
            ref, cand = read_tensor_file(tmp / "a.safetensors"), read_tensor_file(tmp / "b.safetensors")
            return compare_captures(ref, cand, metric=metric)

        from hipwizard.parity.capture.stream import CaptureSink
        from hipwizard.parity.compare.metrics import compute as numpy_metrics

        def streamed() -> None:  # the CLI's capture: outputs written while the pass runs (capture_stream)
            with CaptureSink(tmp / "s.safetensors") as sink:
                outs, names_run, _sec = run_hooked(model, names, inputs, device, sink=sink)
                sink.finish({**{f"input/{k}": v for k, v in inputs.items()},
                             **{f"output/{n}": outs[n] for n in names_run}}, meta)

        fb = _backward_bench(args, model, names, inputs, on_device, device, tmp, meta, timed) if args.backward else None
        thin = None
        if args.backward and args.lean:
            from hipwizard.parity.capture import sketch
            from hipwizard.parity.capture.backward import run_backward

            size = sketch.COUNT_SIZE
            thin_meta = dict(meta, output_sketch=size, modules=[
                {**m, "form": sketch.count_form(size), "full_shape": m["shape"]} if _numel(m["shape"]) > size else m
                for m in meta["modules"]])
            thin = _backward_bench(args, model, names, inputs, on_device, device, tmp, thin_meta, timed,
                                   run=_compacted(run_backward), prefix="lean_fb_")
            lean_forward = _lean_forward(_compacted(run_hooked), model, names, inputs, device,
                                         dict(thin_meta, backward=None))

        t = {k: [] for k in ("forward", "hooked", "write", "write_legacy", "plain", "cmp_device", "cmp_numpy",
                             "cmp_legacy", "stream")}
        comp = None
        for _ in range(args.repeat):  # interleaved so drift (clocks, other load) hits all alike
            t["forward"].append(timed(bare)[0])
            s, (cand_out, _o, _x) = timed(run_hooked, model, names, inputs, device, to_host=False)
            t["hooked"].append(timed(run_hooked, model, names, inputs, device)[0])
            t["write"].append(timed(write_capture, tmp / "a.safetensors", tensors, meta)[0])
            t["write_legacy"].append(timed(legacy_write, tmp / "l.safetensors", tensors, meta)[0])
            t["stream"].append(timed(streamed)[0])
            t["plain"].append(timed(plain)[0])
            s, comp = timed(device_compare, cand_out)
            t["cmp_device"].append(s)
            t["cmp_numpy"].append(timed(files_compare, numpy_metrics)[0])
            t["cmp_legacy"].append(timed(files_compare, legacy_metrics)[0])
            del cand_out
            if thin is not None:
                seconds, lean_fwd_comp = timed(lean_forward)
                t.setdefault("lean_fwd", []).append(seconds)
            for bench in (fb, thin):
                if bench is not None:
                    for key, seconds in bench.round().items():
                        t.setdefault(key, []).append(seconds)
        product = _product(tmp / "model", args, device) if thin is not None and not args.no_product else None

    m = {k: statistics.median(v) for k, v in t.items()}
    f = m["forward"]
    # what the CLI does (runs.capture_subject): on a GPU the pass, then the write; on the CPU the streamed capture
    streamed_total = m["stream"] + m["cmp_device"]
    batch_total = m["hooked"] + m["write"] + m["cmp_device"]
    total = batch_total if cuda or args.compact else streamed_total  # a compact capture is never streamed
    budget = 2 * f + m["plain"]
    result = {
        "size": args.size, "device": meta["device_name"], "dtype": args.dtype, "batch": args.batch, "seq": args.seq,
        "modules": len(order), "capture_bytes": a.bytes, "repeat": args.repeat, "torch": torch.__version__,
        **{f"{k}_s": round(v, 5) for k, v in m.items()},
        "hooked_over_forward": round(m["hooked"] / f, 3), "write_over_plain": round(m["write"] / m["plain"], 3),
        "legacy_write_over_plain": round(m["write_legacy"] / m["plain"], 3),
        "numpy_speedup": round(m["cmp_legacy"] / m["cmp_numpy"], 2),
        "total_s": round(total, 5), "target_s": round(budget, 5), "total_over_target": round(total / budget, 3),
        "batch_total_over_target": round(batch_total / budget, 3),
        "streamed_total_over_target": round(streamed_total / budget, 3),
        "verdict": comp.verdict,
    }
    if fb is not None:
        total_fb = (m["fb_hooked"] + m["fb_write"] if cuda or args.compact else m["fb_stream"]) + m["fb_cmp_device"]
        result.update({"fb_capture_bytes": fb.bytes, "fb_total_s": round(total_fb, 5), "grad_sketch": fb.spec.count_size,
                       "fb_over_bare": round(total_fb / m["fb_bare"], 3),
                       "fb_over_target_with_write": round(total_fb / (3 * m["fb_bare"] + m["fb_plain"]), 3),
                       "fb_hooked_over_bare": round(m["fb_hooked"] / m["fb_bare"], 3),
                       "fb_verdict": fb.verdict})
    if thin is not None:
        lean_total = m["lean_fb_hooked"] + m["lean_fb_write"] + m["lean_fb_cmp_device"]  # a compact file is never streamed
        result.update({"lean_fb_capture_bytes": thin.bytes, "lean_fb_total_s": round(lean_total, 5),
                       "lean_fb_over_bare": round(lean_total / m["fb_bare"], 3), "lean_fb_verdict": thin.verdict,
                       "lean_fb_over_bare_without_write": round((lean_total - m["lean_fb_write"]) / m["fb_bare"], 3)})
        result.update({"lean_fwd_s": round(m["lean_fwd"], 5), "lean_fwd_over_two_forwards": round(m["lean_fwd"] / (2 * f), 3),
                       "lean_fwd_over_target": round(m["lean_fwd"] / budget, 3),
                       "lean_fwd_verdict": lean_fwd_comp.verdict})
        result["product"] = product
    if args.json:
        print(json.dumps(result))
        return 0
    ms = lambda k: f"{m[k] * 1e3:9.2f} ms"  # noqa: E731
    print(f"parity benchmark — {args.size} Llama ({len(order)} hooked modules), {args.dtype} on {result['device']}, "
          f"batch {args.batch} × seq {args.seq}, capture file {a.bytes / 1e6:.2f} MB, median of {args.repeat}, interleaved")
    print(f"  bare forward            {ms('forward')}")
    print(f"  hooked forward          {ms('hooked')}   ratio {m['hooked'] / f:.2f}x   (target ≤ 2x)")
    print(f"  write capture (1 pass)  {ms('write')}   plain write+fsync {m['plain'] * 1e3:.2f} ms   "
          f"ratio {result['write_over_plain']:.2f}x   (before: save()+write {m['write_legacy'] * 1e3:.2f} ms, "
          f"{result['legacy_write_over_plain']:.2f}x)")
    how = "torch float64" if cuda else "numpy, on host"
    print(f"  compare re-run on {device} ({how}) {ms('cmp_device')}   (reads REF, candidate outputs on the device)")
    print(f"  compare two files numpy {ms('cmp_numpy')}   before (whole-array numpy) {m['cmp_legacy'] * 1e3:.2f} ms   "
          f"speed-up {result['numpy_speedup']:.2f}x")
    print(f"  streamed capture (pass + write overlapped) {ms('stream')}   (hooked + write one after the other: "
          f"{(m['hooked'] + m['write']) * 1e3:.2f} ms)")
    print(f"  capture + compare(device), as the CLI does it ({'pass, then write' if cuda or args.compact else 'streamed'}) = "
          f"{total * 1e3:.2f} ms   target 2 x forward + plain write = {budget * 1e3:.2f} ms   ratio "
          f"{result['total_over_target']:.2f} (target ≤ 1; pass then write: {result['batch_total_over_target']:.2f}, "
          f"streamed: {result['streamed_total_over_target']:.2f})")
    if fb is not None:
        print(f"  bare forward+backward   {ms('fb_bare')}")
        form = f"∂out/∂in as count sketches of {fb.spec.count_size}" if fb.spec.count_size else "every element of ∂out/∂in"
        print(f"  hooked forward+backward {ms('fb_hooked')}   ratio {result['fb_hooked_over_bare']:.2f}x   "
              f"(capture file {fb.bytes / 1e6:.2f} MB, {form})")
        print(f"  write f+b capture       {ms('fb_write')}   plain write+fsync {m['fb_plain'] * 1e3:.2f} ms")
        print(f"  streamed f+b capture    {ms('fb_stream')}   (hooked + write one after the other: "
              f"{(m['fb_hooked'] + m['fb_write']) * 1e3:.2f} ms)")
        print(f"  compare f+b re-run on {device} {ms('fb_cmp_device')}   verdict {fb.verdict}")
        print(f"  capture + compare (f+b), as the CLI does it = {total_fb * 1e3:.2f} ms = {result['fb_over_bare']:.2f}x bare "
              f"forward+backward (target ≤ 3x); against 3 x bare + plain write: {result['fb_over_target_with_write']:.2f}")
    if thin is not None:
        print(f"  -- before vs after (issue 34), same rounds: before = the default f+b capture above, "
              f"{fb.bytes / 1e6:.2f} MB, {result['fb_over_bare']:.2f}x bare")
        print(f"  after: every row sketched  {thin.bytes / 1e6:.2f} MB   hooked {ms('lean_fb_hooked')}   "
              f"write {ms('lean_fb_write')}   compare {ms('lean_fb_cmp_device')}   = {result['lean_fb_over_bare']:.2f}x "
              f"bare (without the write, as `compare --lean` does on one machine: "
              f"{result['lean_fb_over_bare_without_write']:.2f}x)   verdict {thin.verdict}")
        print(f"  forward, every output sketched, compared in memory (nothing written, as `compare --lean` without "
              f"--backward): {ms('lean_fwd')} = {result['lean_fwd_over_two_forwards']:.2f} x (2 x bare forward); "
              f"{result['lean_fwd_over_target']:.2f} of the forward target (2 x forward + plain write)   verdict "
              f"{result['lean_fwd_verdict']}")
        pr = result["product"]
        if pr is None:
            return 0
        print(f"  product, end to end (model loads, 3 captures each): compare --triangle {pr['full_s']:.2f} s, writing "
              f"{pr['full_written_bytes_ref_and_cand'] / 1e6:.2f} MB (+ the run-dtype reference); with --lean "
              f"{pr['lean_s']:.2f} s, writing 0 B ({pr['lean_in_memory_bytes'] / 1e6:.2f} MB of sketches in memory), "
              f"{pr['lean_flagged']} row(s) flagged; every row's deciding verdict equal: {pr['deciding_equal']}, "
              f"fixed verdicts equal: {pr['verdicts_equal']} ({pr['rows']} rows, verdict {pr['verdict'][0]} / "
              f"{pr['verdict'][1]})" + "".join(f"\n    fixed verdict differs: {d}" for d in pr["fixed_differs"]))
    return 0


def _lean_forward(run_sketched, model, names, inputs, device, meta):
    """The forward of `compare --lean` on the candidate's side: the hooked pass with every output count-sketched on
    the device, compared with a reference held in memory (sketched the same way, as the lean path's CPU sides are),
    nothing written. Returns the timed function (one pass + one compare)."""
    from hipwizard.parity.compare import metrics_torch
    from hipwizard.parity.compare.captures import compare_captures
    from hipwizard.parity.tensorfile import META_KEY, TensorFile

    ins = {f"input/{k}": v.numpy() for k, v in inputs.items()}
    ref_out, ref_order, _s = run_sketched(model, names, inputs, device)
    text = json.dumps(meta)
    ref = TensorFile(Path("reference (in memory)"), {**ins, **{f"output/{n}": ref_out[n] for n in ref_order}}, {},
                     {META_KEY: text})

    def run():
        out, order, _x = run_sketched(model, names, inputs, device, to_host=False)
        cand = TensorFile(Path("this run"), {**ins, **{f"output/{n}": out[n] for n in order}}, {}, {META_KEY: text})
        return compare_captures(ref, cand, metric=metrics_torch.metric_for(device))
    return run


def _compacted(run):
    """``run`` (run_hooked or run_backward) with its module outputs count-sketched on the device before they go
    to the host, as a compact capture stores them (never streamed)."""
    def wrapped(*args, to_host=True, sink=None, **kwargs):
        from hipwizard.parity.capture import sketch
        from hipwizard.parity.capture.tensors import host_copy

        out = list(run(*args, to_host=False, **kwargs))
        out[0] = sketch.count_sketch_named(out[0], sketch.COUNT_SIZE)[0]
        if to_host:
            out[0] = host_copy(out[0])
            if len(out) == 6:  # run_backward: the gradients too
                out[2] = host_copy(out[2])
        return tuple(out)
    return wrapped


class _backward_bench:
    """The forward+backward timings of one round (see the module docstring), sharing the forward's model."""

    run = None  # run_backward, or its compacted form (--compact)

    def __init__(self, args, model, names, inputs, on_device, device, tmp, meta, timed, run=None, prefix="fb_"):
        from hipwizard.parity.capture.backward import BackwardSpec, run_backward

        run_backward = run or type(self).run or run_backward
        self.prefix = prefix

        self.spec, self.model, self.names, self.inputs = BackwardSpec(count_size=args.grad_sketch), model, names, inputs
        self.on_device, self.device, self.tmp, self.timed, self.run_backward = on_device, device, tmp, timed, run_backward
        self.bare()
        outputs, order, grads, rows, loss, _s = run_backward(model, names, inputs, device, self.spec)  # warm-up
        self.tensors = {**{f"input/{k}": v for k, v in inputs.items()}, **{f"output/{n}": outputs[n] for n in order},
                        **grads}
        self.meta = dict(meta, backward={**self.spec.as_dict(), "loss_value": loss,
                                         "grads": [{**r, "order": i} for i, r in enumerate(rows)]})
        from hipwizard.parity.capture.model import write_capture

        self.write_capture = write_capture
        self.file = tmp / f"{prefix}capture.safetensors"
        self.bytes = write_capture(self.file, self.tensors, self.meta).bytes
        self.blob = os.urandom(self.bytes)
        self.verdict = None

    def bare(self) -> None:
        import torch

        from hipwizard.parity.capture.backward import scalar_loss

        with torch.enable_grad():
            out = self.model(**self.on_device, use_cache=False)
            scalar_loss(out.logits, self.inputs["input_ids"], self.spec).backward()
        self.model.zero_grad(set_to_none=True)

    def plain(self) -> None:
        with open(self.tmp / "plain-fb.bin", "wb") as fh:
            fh.write(self.blob)
            fh.flush()
            os.fsync(fh.fileno())

    def compare(self) -> None:
        from hipwizard.parity.compare import metrics_torch
        from hipwizard.parity.compare.captures import compare_captures
        from hipwizard.parity.tensorfile import META_KEY, TensorFile, read_tensor_file

        outputs, order, grads, _rows, _loss, _s = self.run_backward(self.model, self.names, self.inputs, self.device,
                                                                   self.spec, to_host=False)
        t0 = time.perf_counter()
        ref = metrics_torch.upload(read_tensor_file(self.file, decode_bf16=False), self.device)
        cand = TensorFile(Path("this run"), {**{f"input/{k}": v.numpy() for k, v in self.inputs.items()},
                                             **{f"output/{n}": t for n, t in outputs.items()}, **grads},
                          {}, {META_KEY: json.dumps(self.meta)})
        comp = compare_captures(ref, cand, metric=metrics_torch.metric_for(self.device), backward=True)
        self.verdict = comp.verdict
        return time.perf_counter() - t0

    def streamed(self) -> None:
        from hipwizard.parity.capture.stream import CaptureSink

        with CaptureSink(self.tmp / "fb-s.safetensors") as sink:
            outputs, order, grads, _rows, _loss, _s = self.run_backward(self.model, self.names, self.inputs,
                                                                       self.device, self.spec, sink=sink)
            sink.finish({**{f"input/{k}": v for k, v in self.inputs.items()},
                         **{f"output/{n}": outputs[n] for n in order}, **grads}, self.meta)

    def round(self) -> dict[str, float]:
        """One interleaved round; compare's time excludes its own (untimed) candidate pass."""
        out = {"bare": self.timed(self.bare)[0],
               "stream": self.timed(self.streamed)[0] if self.prefix == "fb_" else 0.0,  # a compact file: never
               "hooked": self.timed(self.run_backward, self.model, self.names, self.inputs, self.device, self.spec)[0],
               "write": self.timed(self.write_capture, self.file, self.tensors, self.meta)[0],
               "plain": self.timed(self.plain)[0]}
        out["cmp_device"] = self.compare()
        return {self.prefix + k: v for k, v in out.items()}


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _product(model_dir: Path, args, device: str) -> dict:
    """`compare --reference cpu --triangle --backward` with and without --lean on the bench's model, end to end,
    alternated (min(--repeat, 3) each): medians, bytes the full one writes, and whether every row's verdicts agree."""
    from hipwizard.parity import lean, runs
    from hipwizard.parity.requests import RunOptions, Subject

    opts = RunOptions(dtype=args.dtype, device=device, batch=args.batch, seq=args.seq, backward=True, triangle=True)
    subject = Subject(model=model_dir)

    def rows(c):
        return [(x.name, x.verdict, x.deciding_pass) for x in c.layers + (c.backward.layers if c.backward else [])]

    full_s, lean_s, full, thin = [], [], None, None
    for _ in range(min(args.repeat, 3)):
        t0 = time.perf_counter()
        full = runs.compare_same_machine(subject, opts)
        t1 = time.perf_counter()
        thin = lean.compare_lean(subject, opts)
        lean_s.append(time.perf_counter() - t1)
        full_s.append(t1 - t0)
    written = sum(int(full.timings.get(k) or 0) for k in ("reference_bytes", "candidate_bytes"))
    return {"full_s": round(statistics.median(full_s), 3), "lean_s": round(statistics.median(lean_s), 3),
            "full_written_bytes_ref_and_cand": written, "lean_written_bytes": 0,
            "lean_in_memory_bytes": thin.timings.get("lean_bytes"), "lean_flagged": thin.timings.get("lean_flagged"),
            "verdicts_equal": rows(full) == rows(thin), "rows": len(rows(full)), "verdict": [full.verdict, thin.verdict],
            "deciding_equal": [r[::2] for r in rows(full)] == [r[::2] for r in rows(thin)],
            "fixed_differs": [f"{a[0]}: {a[1]} (full: {why(full, a[0])}) / {b[1]} (lean)"
                              for a, b in zip(rows(full), rows(thin), strict=False) if a[1] != b[1]]}


def why(comp, name: str) -> str:
    """The fixed table's reasons for one row of ``comp`` (both directions), or "within"."""
    for x in comp.layers + (comp.backward.layers if comp.backward else []):
        if x.name == name:
            return "; ".join(x.metrics.reasons) if x.metrics and x.metrics.reasons else "within"
    return "?"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
