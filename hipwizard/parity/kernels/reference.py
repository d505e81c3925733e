"""A reference the user names in the spec: a torch expression over the kernel's buffers, the oracle instead of the twin.

The spec's ``reference`` field is one Python expression, e.g. ``F.gelu(inp, approximate="tanh")`` or
``{"out": torch.softmax(inp.view(N, C), -1), "stats": ...}``. Its names: each buffer that is read (``in`` and
``inout``, its initial lanes as a flat float64 tensor), the spec's dimensions and scalars (numbers), ``torch``,
``F`` (``torch.nn.functional``) and ``math``. A tensor is the value of the one written buffer; a dict names
several. The result is flattened and compared, as float64, over the first elements of each written buffer (an
element the reference does not give is not judged).

It is checked when the spec is read (``check_expression``: it parses, and names only those names) and evaluated
in a subprocess (``python -m hipwizard.parity.kernels.reference MANIFEST``), never in the UI process: torch is
imported there only.
"""

from __future__ import annotations

import ast
import builtins as builtins_module
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hipwizard.parity.kernels.spec import KernelSpec

MODULES = ("torch", "F", "math")
_BUILTINS = ("abs", "min", "max", "range", "len", "float", "int", "sum", "dict", "list", "tuple")


def names_of(spec: KernelSpec) -> set[str]:
    """The names a reference may use."""
    return ({b.name for b in spec.buffers if b.role != "out"} | set(spec.dims) | {s.name for s in spec.scalars}
            | set(MODULES) | set(_BUILTINS))


def check_expression(spec: KernelSpec) -> str:
    """'' when the spec's reference is usable, else why not (one line)."""
    expr = spec.reference.strip()
    if not expr:
        return ""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        return f"the reference of {spec.kernel} does not parse: {exc.msg} (column {exc.offset})"
    known = names_of(spec)
    written = {b.name for b in spec.buffers if b.role != "in"}
    bound = {n.id for node in ast.walk(tree) if isinstance(node, ast.comprehension)
             for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in known and node.id not in bound:
            hint = " (an output: the reference computes it)" if node.id in written else ""
            return f"the reference of {spec.kernel} names {node.id!r}{hint}; it may use {', '.join(sorted(known - set(_BUILTINS)))}"
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            return f"the reference of {spec.kernel} reaches {node.attr!r}: not allowed"
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if not (isinstance(key, ast.Constant) and key.value in written):
                    return (f"the reference of {spec.kernel}: a dict's keys are the written buffers "
                            f"({', '.join(sorted(written))})")
    if not written:
        return f"the reference of {spec.kernel}: the kernel writes no buffer"
    return ""


def evaluate(spec: KernelSpec, cases: list[dict], work: Path, timeout_s: int = 600) -> dict[int, dict | str]:
    """Evaluate the spec's reference per case in a subprocess. ``cases``: ``{"case", "inputs" (name -> float64
    array), "numbers" (name -> value)}``. Returns case -> {buffer: float64 array} or the error text."""
    work.mkdir(parents=True, exist_ok=True)
    written = [b.name for b in spec.buffers if b.role != "in"]
    manifest = []
    for c in cases:
        inp = work / f"ref{c['case']}.in.npz"
        arrays: dict[str, Any] = {k: np.asarray(v, dtype=np.float64) for k, v in c["inputs"].items()}
        np.savez(inp, **arrays)
        manifest.append({"case": c["case"], "inputs": str(inp), "numbers": c["numbers"],
                         "out": str(work / f"ref{c['case']}.out.npz")})
    man = work / "reference.json"
    man.write_text(json.dumps({"expression": spec.reference, "written": written, "cases": manifest}),
                   encoding="utf-8")
    try:
        proc = subprocess.run([sys.executable, "-m", "hipwizard.parity.kernels.reference", str(man)],
                              capture_output=True, text=True, timeout=timeout_s, check=False)
        failed = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
    except (OSError, subprocess.TimeoutExpired) as exc:
        failed = [f"the reference did not finish: {exc}"]
    out: dict[int, dict | str] = {}
    for m in manifest:
        path, err = Path(m["out"]), Path(m["out"] + ".error")
        if path.is_file():
            with np.load(path) as z:
                out[m["case"]] = {k: z[k] for k in z.files}
        else:
            out[m["case"]] = err.read_text(encoding="utf-8") if err.is_file() else (
                failed[0] if failed else "the reference gave nothing")
    return out


def _run(manifest_path: str) -> int:
    import torch  # heavy: torch (this subprocess only)
    import torch.nn.functional as F  # heavy: torch

    doc = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    code = compile(doc["expression"], "<reference>", "eval")
    builtins = {n: getattr(builtins_module, n) for n in _BUILTINS}
    for case in doc["cases"]:
        try:
            with np.load(case["inputs"]) as z:
                scope: dict[str, Any] = {k: torch.from_numpy(z[k].copy()) for k in z.files}
            scope.update(case["numbers"])
            scope.update({"torch": torch, "F": F, "math": math})
            value = eval(code, {"__builtins__": builtins}, scope)  # noqa: S307 - the user's own spec, a subprocess
            if not isinstance(value, dict):
                if len(doc["written"]) != 1:
                    raise ValueError(f"the kernel writes {', '.join(doc['written'])}: give a dict")
                value = {doc["written"][0]: value}
            arrays: dict[str, Any] = {k: torch.as_tensor(v).detach().to(torch.float64).cpu().reshape(-1).numpy()
                      for k, v in value.items()}
            np.savez(case["out"], **arrays)
        except Exception as exc:  # one line per case: the sweep reports it as the oracle's failure
            Path(case["out"] + ".error").write_text(f"the reference failed: {type(exc).__name__}: {exc}"[:300],
                                                    encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_run(sys.argv[1]))
