"""The edit log: passes of replacements folded onto the original's offsets, checked against applying them."""

from __future__ import annotations

import random

import pytest

from hipwizard.port.translation.edits import Edit, EditLog, apply_edits


def _random_edits(rng: random.Random, text: str) -> list[Edit]:
    edits, pos = [], 0
    while pos < len(text):
        start = pos + rng.randint(0, 6)
        if start > len(text):
            break
        end = min(len(text), start + rng.choice([0, 0, 1, 2, 5]))
        edits.append(Edit(start, end, rng.choice(["", "X", "YY\n", "zzz", "\n"])))
        pos = end + rng.randint(0, 4)
    return edits


def _consistent(original: str, log: EditLog) -> None:
    """Outside the spans the texts are equal and offsets agree; inside, the spans rebuild the final text."""
    pos_o = pos_t = 0
    for s in log.spans:
        assert s.start >= pos_o and s.new_start >= pos_t
        assert original[pos_o:s.start] == log.text[pos_t:s.new_start]
        pos_o, pos_t = s.end, s.new_end
    assert original[pos_o:] == log.text[pos_t:]


@pytest.mark.parametrize("seed", range(200))
def test_passes_fold_onto_the_original(seed):
    rng = random.Random(seed)
    original = "".join(rng.choice("ab\n") for _ in range(rng.randint(0, 60)))
    log, expected = EditLog(original), original
    for _ in range(rng.randint(1, 4)):
        edits = _random_edits(rng, log.text)
        expected = apply_edits(expected, edits)
        log.then(edits)
        assert log.text == expected
        _consistent(original, log)


def test_no_op_edits_leave_no_span():
    log = EditLog("cudaMalloc(x);\n")
    log.then([Edit(0, 4, "cuda")])
    assert log.spans == [] and log.text == "cudaMalloc(x);\n"


def test_a_later_edit_inside_an_earlier_one_widens_to_it():
    log = EditLog("f(cudaFoo);\n")
    log.then([Edit(2, 9, "hipFoo")])
    log.then([Edit(2, 8, "HIP_SYMBOL(hipFoo)")])
    assert log.text == "f(HIP_SYMBOL(hipFoo));\n"
    (span,) = log.spans
    assert (span.start, span.end) == (2, 9) and log.text[span.new_start:span.new_end] == "HIP_SYMBOL(hipFoo)"
