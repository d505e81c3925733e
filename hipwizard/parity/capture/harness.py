"""Capture user kernels through a harness file: named cases, each a callable and its inputs.

A harness is a Python file defining either ``CASES`` (a dict) or ``cases()`` returning one::

    import torch
    import my_ext                                 # a CUDA or hipified kernel built with cpp_extension

    def cases():
        g = torch.Generator().manual_seed(0)      # build inputs on the CPU: identical on every machine
        x = torch.randn(64, 1024, generator=g)
        return {"rmsnorm": (my_ext.rmsnorm, [x, torch.ones(1024)]),
                "gelu": (torch.nn.functional.gelu, [x])}

hipwizard moves every input to the device and casts floating inputs to the run's dtype; on
``compare REF --harness FILE.py`` the reference's stored inputs are fed instead. A case returning a
tuple stores each element as ``<case>.<i>``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

from hipwizard.errors import UserError
from hipwizard.parity.capture.model import FORMAT, environment, pick_device, torch_dtype
from hipwizard.parity.compare.tolerances import canonical_dtype
from hipwizard.progress import Progress, ProgressFn, quiet


def load_cases(path: str | Path) -> dict[str, tuple[Any, list]]:
    """Import the harness file and return its cases as {name: (callable, [inputs])}."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"harness {path} does not exist")
    spec = importlib.util.spec_from_file_location(f"hipwizard_harness_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UserError(f"harness {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # so the harness can import extensions built beside it
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise UserError(f"harness {path} failed to import: {type(exc).__name__}: {exc}") from None
    finally:
        sys.path.remove(str(path.parent))
    raw = module.cases() if callable(getattr(module, "cases", None)) else getattr(module, "CASES", None)
    if not isinstance(raw, dict) or not raw:
        raise UserError(f"harness {path} must define CASES (a non-empty dict) or cases() returning one")
    cases = {}
    for name, entry in raw.items():
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and callable(entry[0])):
            raise UserError(f"harness {path}: case {name!r} must be (callable, [inputs])")
        fn, inputs = entry
        cases[str(name)] = (fn, list(inputs) if isinstance(inputs, (list, tuple)) else [inputs])
    return cases


def capture_harness(
    path: str | Path, *, dtype: str = "fp32", device: str = "auto", seed: int = 0,
    inputs_from: dict | None = None, progress: ProgressFn | None = None,
) -> tuple[dict, dict]:
    """Run every case once. Returns (tensors for the file, metadata dict), like ``capture_model``."""
    import torch  # heavy: torch

    progress = progress or quiet
    path = Path(path)
    device = pick_device(device)
    torch.manual_seed(seed)
    cases = load_cases(path)
    tdtype = torch_dtype(dtype)
    tensors: dict[str, Any] = {}
    modules: list[dict] = []
    t0 = time.perf_counter()
    for i, (name, (fn, inputs)) in enumerate(cases.items()):
        progress(Progress("run cases", i, len(cases), name))
        if inputs_from is not None:
            stored = [inputs_from.get(f"{name}/{j}") for j in range(len(inputs))]
            if any(s is None for s in stored):
                raise UserError(f"the reference capture has no stored inputs for case {name!r}")
            inputs = stored
        fed = [_prepare(x, tdtype, device) for x in inputs]
        try:
            with torch.inference_mode():
                out = fn(*fed)
        except Exception as exc:
            raise UserError(f"harness case {name!r} raised {type(exc).__name__}: {exc}") from None
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for j, x in enumerate(fed):
            if isinstance(x, torch.Tensor):
                tensors[f"input/{name}/{j}"] = x.detach().to("cpu", copy=True).contiguous()
        for j, o in enumerate(outs):
            if not isinstance(o, torch.Tensor):
                raise UserError(f"harness case {name!r} returned {type(o).__name__}, not a tensor")
            key = name if len(outs) == 1 else f"{name}.{j}"
            tensors[f"output/{key}"] = o.detach().to("cpu", copy=True).contiguous()
            modules.append({"name": key, "order": len(modules), "shape": list(o.shape),
                            "dtype": str(o.dtype).removeprefix("torch.")})
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    progress(Progress("run cases", len(cases), len(cases)))
    meta = {
        "format": FORMAT, "kind": "harness", **environment(device), "dtype": canonical_dtype(dtype), "seed": seed,
        "harness": {"name": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16]},
        "modules": modules, "timings": {"forward_s": round(time.perf_counter() - t0, 4)},
    }
    return tensors, meta


def _prepare(x, tdtype, device: str):
    import torch  # heavy: torch

    if not isinstance(x, torch.Tensor):
        return x
    x = x.to(device)
    return x.to(tdtype) if x.is_floating_point() else x
