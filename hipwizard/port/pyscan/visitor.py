"""The Python rules over a parsed file (``PySource``): one pass over the AST, findings with fixes where the fix
is mechanical. What each rule id means, and its source, is in ``catalogue.py``."""

from __future__ import annotations

import ast

from hipwizard.port.pyscan.catalogue import PY_RULES_BY_ID as R
from hipwizard.port.pyscan.model import PyFinding, Replacement
from hipwizard.port.pyscan.settings import (
    ALLOC_VARS,
    EXEC_CALLS,
    alloc_conf_problems,
    hip_spelled,
    runs_nvidia_smi,
    without_cutlass,
)
from hipwizard.port.pyscan.source import PySource, in_truth_context

CPP_EXT = "torch.utils.cpp_extension"
IMPORT_RULES = {"pynvml": "PY_NVML", "nvidia_smi": "PY_NVML", "py3nvml": "PY_NVML", "flash_attn": "PY_FLASH_ATTN",
                "flash_attn_interface": "PY_FLASH_ATTN", "flash_attn_2_cuda": "PY_FLASH_ATTN",
                "bitsandbytes": "PY_BITSANDBYTES", "apex": "PY_APEX", "xformers": "PY_XFORMERS",
                "triton": "PY_TRITON", "nvtx": "PY_NVTX", "torch.cuda.nvtx": "PY_NVTX"}
TF32_SWITCHES = {"torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32"}
TF32_PRECISION = ("torch.backends.cuda.matmul.fp32_precision", "torch.backends.cudnn.conv.fp32_precision",
                  "torch.backends.fp32_precision", "torch.backends.cudnn.fp32_precision")
INDUCTOR = "torch._inductor.config."


def scan_source(src: PySource) -> list[PyFinding]:
    """Every rule's findings in ``src``, ordered by line then rule."""
    return _Scan(src).run()


class _Scan:
    def __init__(self, src: PySource):
        self.src = src
        self.out: list[PyFinding] = []
        self.cuda_home_import: ast.alias | None = None  # `from torch.utils.cpp_extension import CUDA_HOME`
        self.rocm_home_imported = False
        self.capability_names: set[str] = set()

    def add(self, rule_id: str, node: ast.AST, *fix: Replacement) -> None:
        self.out.append(PyFinding(R[rule_id], node.lineno, tuple(fix)))  # type: ignore[attr-defined]

    def run(self) -> list[PyFinding]:
        nodes = list(ast.walk(self.src.tree))
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports(node)
        for node in nodes:
            if isinstance(node, ast.Assign | ast.AnnAssign):
                self.assignment(node)
        for node in nodes:
            if isinstance(node, ast.Attribute | ast.Name):
                self.reference(node)
            elif isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, ast.Compare):
                self.compare(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.string(node)
        self.cuda_home_import_fix()
        return sorted(self.out, key=lambda f: (f.line, f.rule.rule_id))

    # --- imports ---------------------------------------------------------------------------------------
    def imports(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                return
            modules = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            if node.module == CPP_EXT:
                for a in node.names:
                    if a.name == "CUDA_HOME":
                        self.cuda_home_import = a
                    self.rocm_home_imported |= a.name == "ROCM_HOME"
        else:
            modules = [a.name for a in node.names]
        rules = {rule for m in modules if (rule := IMPORT_RULES.get(m) or IMPORT_RULES.get(m.split(".")[0]))}
        for rule_id in sorted(rules):
            self.add(rule_id, node)

    # --- names and attributes ----------------------------------------------------------------------------
    def reference(self, node: ast.Attribute | ast.Name) -> None:
        if isinstance(self.src.parent.get(node), ast.Attribute):
            return  # only the whole dotted name is judged
        if not isinstance(node.ctx, ast.Load):
            return
        name = self.src.dotted(node)
        if name in ("torch.version.cuda", f"{CPP_EXT}.CUDA_HOME") and self.already_ported(node):
            return
        if name == "torch.version.cuda":
            seg = self.src.segment(node)
            fix = self.wrap(node, f"({seg} or {seg[:-len('cuda')]}hip)")
            self.add("PY_CUDA_VERSION_GATE", node, *fix)
        elif name == f"{CPP_EXT}.CUDA_HOME":
            seg = self.src.segment(node)
            if isinstance(node, ast.Name):
                # the import gets ROCM_HOME added (cuda_home_import_fix) only when this name came from it
                usable = self.cuda_home_import is not None and (self.cuda_home_import.asname or "CUDA_HOME") == node.id
                fix = self.wrap(node, f"({seg} or ROCM_HOME)") if usable else ()
            else:
                fix = self.wrap(node, f"({seg} or {seg[:-len('CUDA_HOME')]}ROCM_HOME)")
            self.add("PY_CUDA_HOME", node, *fix)
        elif name and name.startswith(INDUCTOR + "cuda."):
            self.add("PY_INDUCTOR_CUDA_ONLY", node)
        elif name and name.startswith("torch.cuda.nvtx."):
            self.add("PY_NVTX", node)

    def already_ported(self, node: ast.AST) -> bool:
        """``torch.version.cuda or torch.version.hip`` / ``CUDA_HOME or ROCM_HOME``: the HIP case is there."""
        parent = self.src.parent.get(node)
        if not isinstance(parent, ast.BoolOp):
            return False
        names = {self.src.dotted(v) or (v.id if isinstance(v, ast.Name) else "") for v in parent.values}
        return bool(names & {"torch.version.hip", f"{CPP_EXT}.ROCM_HOME", "ROCM_HOME"})

    def wrap(self, node: ast.AST, text: str) -> tuple[Replacement, ...]:
        if not in_truth_context(self.src, node) or self.guards_its_own_use(node):
            return ()
        start, end = self.src.span(node)
        return (Replacement(start, end, text),)

    def guards_its_own_use(self, node: ast.AST) -> bool:
        """``if CUDA_HOME is not None: nvcc = CUDA_HOME + "/bin/nvcc"``: widening the gate would run the body with
        the value still None on ROCm, so such a gate is flagged, not fixed."""
        name = self.src.dotted(node)
        for gate in self.src.ancestors(node):
            if isinstance(gate, (ast.If, ast.While, ast.IfExp)):
                body = gate.body if isinstance(gate.body, list) else [gate.body]
                return any(isinstance(n, (ast.Name, ast.Attribute)) and self.src.dotted(n) == name
                           for stmt in body for n in ast.walk(stmt))
            if isinstance(gate, ast.stmt):
                return False
        return False

    def cuda_home_import_fix(self) -> None:
        """The import gets ROCM_HOME when a fix uses it (the uses themselves carry the flags)."""
        a = self.cuda_home_import
        used = any(f.rule.rule_id == "PY_CUDA_HOME" and f.fix for f in self.out)
        if a is not None and used and not self.rocm_home_imported:
            end = self.src.offset(a.end_lineno, a.end_col_offset)  # type: ignore[arg-type]
            self.add("PY_CUDA_HOME", a, Replacement(end, end, ", ROCM_HOME"))

    # --- assignments: TF32 switches, Inductor options, capability results, allocator env ----------------
    def assignment(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        if value is None:
            return
        on = not (isinstance(value, ast.Constant) and value.value in (False, 0, None, "ieee", "highest"))
        for target in targets:
            name = self.src.dotted(target) or ""
            if (name in TF32_SWITCHES and on) or (name in TF32_PRECISION and _const(value) == "tf32"):
                self.add("PY_TF32", node)
            elif name in (INDUCTOR + "max_autotune", INDUCTOR + "max_autotune_gemm") and on:
                self.add("PY_COMPILE_MAX_AUTOTUNE", node)
            elif name == INDUCTOR + "max_autotune_gemm_backends":
                self.gemm_backends(value)
            elif name.startswith(INDUCTOR + "cuda."):
                self.add("PY_INDUCTOR_CUDA_ONLY", node)
            elif isinstance(target, ast.Subscript) and self.src.dotted(target.value) == "os.environ":
                if _const(target.slice) in ALLOC_VARS:
                    self.alloc_conf(value)
            if _calls(self.src, value, ("get_device_capability", "get_device_properties")):
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        self.capability_names.add(t.id)

    def gemm_backends(self, value: ast.AST) -> None:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            fixed = without_cutlass(self.src.segment(value))
            if fixed is not None:
                start, end = self.src.span(value)
                self.add("PY_INDUCTOR_CUDA_ONLY", value, Replacement(start, end, fixed))

    def alloc_conf(self, value: ast.AST | None) -> None:
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            return
        problems = alloc_conf_problems(value.value)
        if problems:
            seg = self.src.segment(value)
            fixed = hip_spelled(seg)
            start, end = self.src.span(value)
            self.add("PY_ALLOC_CONF", value, *((Replacement(start, end, fixed),) if fixed != seg else ()))

    # --- calls ---------------------------------------------------------------------------------------------
    def call(self, node: ast.Call) -> None:
        name = self.src.dotted(node.func) or ""
        last = name.rsplit(".", 1)[-1]
        if name in ("torch.compile",) or name.endswith("._dynamo.optimize"):
            for kw in node.keywords:
                if kw.arg == "mode" and str(_const(kw.value) or "").startswith("max-autotune"):
                    self.add("PY_COMPILE_MAX_AUTOTUNE", kw.value)
                elif kw.arg == "options" and isinstance(kw.value, ast.Dict):
                    self.inductor_options(kw.value)
        elif name == "torch.set_float32_matmul_precision" and _const(node.args[0] if node.args else None) in ("high", "medium"):
            self.add("PY_TF32", node)
        elif name in ("os.environ.setdefault", "os.putenv", "os.environ.__setitem__") and len(node.args) >= 2:
            if _const(node.args[0]) in ALLOC_VARS:
                self.alloc_conf(node.args[1])
        elif last == "_set_allocator_settings" and node.args:
            self.alloc_conf(node.args[0])
        elif name == "os.environ.update" and node.args and isinstance(node.args[0], ast.Dict):
            for k, v in zip(node.args[0].keys, node.args[0].values, strict=True):
                if _const(k) in ALLOC_VARS:
                    self.alloc_conf(v)
        elif name.startswith("torch.cuda.nvtx."):
            pass  # the reference already flagged it

    def inductor_options(self, options: ast.Dict) -> None:
        for k, v in zip(options.keys, options.values, strict=True):
            key = _const(k)
            if key in ("max_autotune", "max_autotune_gemm") and _const(v) is not False:
                self.add("PY_COMPILE_MAX_AUTOTUNE", v)
            elif key == "max_autotune_gemm_backends":
                self.gemm_backends(v)

    def compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return
        if _calls(self.src, node, ("get_device_capability",)) or any(
                isinstance(n, ast.Name) and n.id in self.capability_names for o in operands for n in ast.walk(o)):
            self.add("PY_DEVICE_CAPABILITY", node)
        elif any(isinstance(n, ast.Attribute) and n.attr in ("major", "minor")
                 and _calls(self.src, n.value, ("get_device_properties",)) for o in operands for n in ast.walk(o)):
            self.add("PY_DEVICE_CAPABILITY", node)
        if any(isinstance(n, ast.Call) and self.src.dotted(n.func) == "torch.backends.cudnn.version"
               for o in operands for n in ast.walk(o)):
            self.add("PY_CUDNN_VERSION", node)

    # --- strings -------------------------------------------------------------------------------------------
    def string(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or "nvidia-smi" not in node.value:
            return
        parent = self.src.parent.get(node)
        if isinstance(parent, ast.Expr):
            return  # a docstring
        in_exec = any(isinstance(a, ast.Call) and (self.src.dotted(a.func) or "").startswith(EXEC_CALLS)
                      for a in self.src.ancestors(node))
        if runs_nvidia_smi(node.value, in_exec):
            self.add("PY_NVIDIA_SMI", node)


def _const(node: ast.AST | None):
    return node.value if isinstance(node, ast.Constant) else None


def _calls(src: PySource, node: ast.AST, names: tuple[str, ...]) -> bool:
    """Does ``node`` contain a call of ``torch.cuda.<name>`` (or a bare ``<name>`` imported from torch.cuda)?"""
    return any(isinstance(n, ast.Call) and (src.dotted(n.func) or "").rsplit(".", 1)[-1] in names
               and (src.dotted(n.func) or "").startswith(("torch.cuda.", *names))
               for n in ast.walk(node))
