"""The review-state path stays linear in the size of a file (issue 27: a 7.4 MB file took > 120 s through
``hipify --out``, each untouched risk summing over every hunk). Same answers as before, fewer passes."""

from __future__ import annotations

from dataclasses import asdict, fields

from hipwizard.port.model import FileTranslation, Hunk, RiskFlag, UntouchedRisk
from hipwizard.port.risk import flow as risk_flow
from hipwizard.port.risk.flags import code_lines
from hipwizard.port.translation.hunks import split_hunks

WARP_FILE = """#define WARP 32
__global__ void {name}(float *x) {{
  for (int o = 16; o > 0; o /= 2) x[threadIdx.x] += __shfl_down_sync(0xffffffff, x[threadIdx.x], o, WARP);
}}
void launch_{name}(float *x) {{
  {name}<<<1, 32>>>(x);
  hipLaunchKernelGGL({name}, 1, 32, 0, 0, x);
}}
"""


class CountingList(list):
    """A list that counts the passes over it."""

    passes = 0

    def __iter__(self):
        CountingList.passes += 1
        return super().__iter__()


def _translation_that_shifts_lines() -> FileTranslation:
    """300 lines; every 10th becomes two, every 15th goes away: hunks that move the lines below them."""
    original = [f"int v{i} = {i};" for i in range(300)]
    translated = []
    for i, line in enumerate(original):
        if i % 15 == 7:
            continue
        translated += [line, f"int w{i} = {i};"] if i % 10 == 3 else [line]
    old, new = "\n".join(original) + "\n", "\n".join(translated) + "\n"
    return FileTranslation("a.cu", old, new, "builtin", split_hunks("a.cu", old, new))


def _shift_quadratic(ft: FileTranslation, n: int) -> int:
    return sum(len(h.old_lines) - len(h.new_lines) for h in ft.hunks if h.new_start + len(h.new_lines) <= n)


def test_untouched_risks_read_the_hunks_once_with_the_same_lines():
    ft = _translation_that_shifts_lines()
    # many flags, spread over the file: one pass over the hunks, not one per flag
    n_lines = ft.translated.count("\n") + 1
    ft.untouched_flags = [RiskFlag("R", "low", "r", "h", line=n) for n in range(1, n_lines + 1)]
    expected = [n + _shift_quadratic(ft, n) for n in range(1, n_lines + 1)]
    ft.hunks = CountingList(ft.hunks)
    CountingList.passes = 0
    risks = UntouchedRisk.of(ft)
    assert CountingList.passes <= 2, CountingList.passes
    assert [r.old_line for r in risks] == expected
    assert any(r.old_line != r.flag.line for r in risks)  # the hunks do shift lines in this file


def test_to_dict_is_asdict_field_for_field():
    flag = RiskFlag("WARP32_LITERAL", "high", "r", "h", "src", 7)
    hunk = Hunk("a.cu", 3, ["x\n"], 4, ["y\n", "z\n"], ["c\n"], ["d\n"], [flag])
    slow = asdict(hunk)
    assert hunk.to_dict() == slow and list(hunk.to_dict()) == [f.name for f in fields(Hunk)]
    assert flag.to_dict() == asdict(flag) and list(flag.to_dict()) == [f.name for f in fields(RiskFlag)]
    copy = hunk.to_dict()
    copy["old_lines"].append("w\n")
    assert hunk.old_lines == ["x\n"]  # a copy, as asdict gave


def test_many_warp_functions_give_the_same_uses_either_way(monkeypatch):
    text = "".join(WARP_FILE.format(name=f"k{i}") for i in range(40))
    text += "void host(float *x) { k3<<<1, 64>>>(x); not_k3<<<1, 1>>>(x); obj.k4<<<1, 1>>>(x); }\n"
    lines = code_lines(text)
    functions = risk_flow.warp_functions(lines)
    assert len(functions) > risk_flow._FEW_NAMES  # the word pass
    by_words = risk_flow.warp_function_uses(lines, functions)
    monkeypatch.setattr(risk_flow, "_FEW_NAMES", 10**9)  # one literal search per name, as before
    assert by_words == risk_flow.warp_function_uses(lines, functions)
    assert len(by_words) >= 80  # both launches of every kernel
    assert text.count("\n") in [i + 1 for i in by_words]  # the host line's k3<<<, not not_k3 nor obj.k4


def _written_line_quadratic(review, rel, risk):
    shift = 0
    for i in review.by_file.get(rel, ()):
        h = review.hunks[i]
        if h.old_start + len(h.old_lines) <= risk.old_line:
            shift += len(review.chosen_lines(h)) - len(h.old_lines)
    return risk.old_line + shift


def test_written_lines_of_untouched_risks_follow_the_decisions(tmp_path):
    from hipwizard.port.review.state import ReviewState

    ft = _translation_that_shifts_lines()
    n_lines = ft.translated.count("\n")
    ft.untouched_flags = [RiskFlag("R", "low", "r", "h", line=n) for n in range(1, n_lines + 1)]
    review = ReviewState.create(tmp_path / "src", tmp_path / "out", [ft], path=tmp_path / "out.review.json")
    (risks,) = review.untouched.values()
    ids = [h.hunk_id for h in review.hunks]
    for step, (chosen, state) in enumerate([(ids[::2], "accepted"), (ids[1::3], "rejected"), (ids, "accepted")]):
        review.decide(chosen, state)
        if step == 1:
            review.edit(ids[0], ["a\n", "b\n", "c\n", "d\n"])  # an edit of another length moves the lines too
        got = [review.written_line("a.cu", r) for r in risks]  # remembered answers follow each decision
        assert got == [_written_line_quadratic(review, "a.cu", r) for r in risks]
        assert got != [r.old_line for r in risks]
    # the hunks of the file are read once for all its risks, not once per risk
    reads = []
    real = type(review).chosen_lines
    review.chosen_lines = lambda h: reads.append(h) or real(review, h)
    review.decide(ids[:1], "rejected")
    [review.written_line("a.cu", r) for r in risks]
    assert len(reads) == len(ids)
