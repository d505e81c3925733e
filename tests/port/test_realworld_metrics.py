"""The real-port benchmark's measures (benchmarks/realworld_metrics.py) and the data-flow rules, on a real pair:
HeCBench's gc benchmark (CUDA and the human HIP port, copied under tests/fixtures/port/realworld with their URLs)."""

from __future__ import annotations

import sys
from pathlib import Path

from hipwizard.port.risk.flags import find_risks
from hipwizard.port.translation.tables import load_tables

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from realworld_metrics import Score, held_out, human_edits, similarity  # noqa: E402

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "port" / "realworld"
CUDA = (FIX / "gc_cuda.cu").read_text()
HIP = (FIX / "gc_hip.cu").read_text()


def _line(text: str, needle: str) -> int:
    return next(i for i, x in enumerate(text.split("\n"), 1) if needle in x)


def test_edits_beyond_renaming_are_found_on_the_cuda_lines():
    edits = human_edits(CUDA, HIP, load_tables())
    lane = _line(CUDA, "threadIdx.x % WS")
    vote = _line(CUDA, "__any_sync(Warp")
    assert any(e.lo <= lane <= e.hi and e.kind == "warp-size" for e in edits)
    assert any(e.lo <= vote <= e.hi for e in edits)
    # the comment change on the WS line ("warp size" -> "word size") is cosmetic: no edit sits on it alone
    ws = _line(CUDA, "static const int WS = 32")
    assert not any(e.lo == e.hi == ws for e in edits)


def test_launch_rewrites_and_renames_are_cosmetic():
    cuda = "#include <cuda_runtime.h>\nvoid f(){ CHECK_CUDA(cudaMalloc(&p, n));\n k<<<g, b>>>(p); }\n"
    hip = "#include <hip/hip_runtime.h>\nvoid f(){ CHECK_HIP(hipMalloc(&p, n));\n hipLaunchKernelGGL(k, dim3(g), dim3(b), 0, 0, p); }\n"
    assert human_edits(cuda, hip, load_tables()) == []


def test_warp_constant_flags_its_uses_not_other_constants():
    hits = {f.line for f in find_risks(CUDA) if f.rule.rule_id == "WARP32_CONST_USE"}
    assert _line(CUDA, "threadIdx.x % WS") in hits and _line(CUDA, "(1 << (WS / 2)) - 1") in hits
    assert _line(CUDA, "static const int WS = 32") not in hits  # the definition is WARP32_LITERAL's
    renamed = CUDA.replace("WS", "NB").replace("warp size", "count")
    assert not any(f.rule.rule_id == "WARP32_CONST_USE" for f in find_risks(renamed))


def test_tensor_core_helper_callers_are_flagged():
    src = ("__device__ __forceinline__ void ldsm_x4(unsigned* r, const void* p) {\n"
           '  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]) : "r"(p));\n'
           "}\n__global__ void gemm(const half* a) {\n  unsigned r[4];\n  ldsm_x4(r, a);\n}\n")
    hits = {f.line for f in find_risks(src) if f.rule.rule_id == "TENSOR_CORE_HELPER"}
    assert hits == {6}


def test_score_recall_precision_density_and_the_fixed_split():
    edits = human_edits(CUDA, HIP, load_tables())
    s = Score()
    flags = {_line(CUDA, "threadIdx.x % WS"): {"WARP32_CONST_USE"}, 900: {"X"}}
    s.add("gc", edits, flags, 1000)
    assert s.edits == len(edits) and 1 <= s.caught < s.edits
    assert s.places == 2 and s.places_near == 1 and s.precision == 0.5 and s.per_kloc == 2.0
    names = [f"b{i:02d}" for i in range(20)]
    assert held_out(names) == {"b04", "b09", "b14", "b19"} == held_out(list(reversed(names)))
    tok, line = similarity(HIP, HIP)
    assert tok == line == 1.0 and similarity(CUDA, HIP)[1] < 1.0


def test_edit_finder_v2_folds_library_prefixed_names_aliases_and_dim3_defaults(monkeypatch):
    import realworld_metrics

    tables = load_tables()
    cuda = ["#define CHECK_CUSPARSE(x) x", "cublasHandle_t cublasHandle;", "CHECK_CUSPARSE(cusparseCreate(&h));",
            "cudaMallocHost((void**)&p, n);", "k<<<n, dim3(tx, ty, 1)>>>(p);", 'printf("%s", cublasGetStatusString(s));']
    hip = ["#define CHECK_HIPSPARSE(x) x", "hipblasHandle_t hipblasHandle;", "CHECK_HIPSPARSE(hipsparseCreate(&h));",
           "hipMallocHost((void**)&p, n);", "hipLaunchKernelGGL(k, dim3(n), dim3(tx, ty), 0, 0, p);",
           'printf("%s", hipblasStatusToString(s));']

    def text(lines):  # an unchanged line between each, so each change is its own edit
        return "".join(f"{x}\nint keep{i};\n" for i, x in enumerate(lines))

    edits = human_edits(text(cuda), text(hip), tables)
    # only the real API change is left (HIPIFY has no HIP name for cublasGetStatusString)
    assert [e.lo for e in edits] == [11]
    assert realworld_metrics.fold("cublasGetStatusString", tables) == "hipblasgetstatusstring"
    monkeypatch.setattr(realworld_metrics, "FINDER", "v1")
    assert [e.lo for e in human_edits(text(cuda), text(hip), tables)] == [1, 3, 5, 7, 9, 11]
