"""Searching lines through required literals gives what a per-line loop gives, for every risk rule."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.port.risk.flags import code_lines
from hipwizard.port.risk.line_search import CodeLines, matching_lines, required_literals
from hipwizard.port.risk.rules import RULES

PATTERNS = [r.detect.pattern for r in RULES if hasattr(r.detect, "pattern")]
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "port" / "corpus"


def _per_line(rx, lines):
    return [i for i, line in enumerate(lines) if rx.search(line)]


def _texts():
    paths = sorted(p for p in DEMO_PROJECT.rglob("*") if p.suffix in (".cu", ".cuh"))
    return [p.read_text() for p in paths + sorted(CORPUS.iterdir()) if p.suffix != ".md"]


def test_every_rule_pattern_has_required_literals():
    # a pattern without them falls back to a whole-text search: correct, but slow on big files
    assert PATTERNS and all(required_literals(rx.pattern, rx.flags) for rx in PATTERNS)


@pytest.mark.parametrize("rx", PATTERNS, ids=[r.rule_id for r in RULES if hasattr(r.detect, "pattern")])
def test_rule_patterns_find_the_lines_a_loop_finds(rx):
    text = "\n".join(_texts()) * 2
    lines = code_lines(text)
    assert matching_lines(rx, lines) == _per_line(rx, lines)


def test_fuzzed_lines_and_case_folding():
    rng = random.Random(7)
    words = ["warp", "WARP", "Lane", "& 31", "0xffffffff", "mask", "__shfl_xor_sync(", "tid % 32", "\t", " ", "x",
             "__syncwarp()", "E4M3FN", "#include <cuda/pipeline>", "(", ")", ";", "=", "32"]
    lines = ["".join(rng.choice(words) for _ in range(rng.randint(0, 8))) for _ in range(3000)]
    for rx in PATTERNS + [re.compile(r"\bfoo|ba+r"), re.compile(r"(?i)x\s*=\s*\d")]:
        assert matching_lines(rx, CodeLines(lines)) == _per_line(rx, lines), rx.pattern
        for start in range(0, 400, 7):  # a hunk's few lines take the short path
            few = lines[start:start + start % 9]
            assert matching_lines(rx, few) == _per_line(rx, few), (rx.pattern, few)


def test_non_ascii_case_pairs_fall_back_safely():
    # 'İ'.lower() is two characters: offsets of a lowered text would drift, so the search must not use them
    lines = ["İİİİ warp"] * 20 + ["x WARP = 32"]
    rx = re.compile(r"(?i)warp\s*=\s*32")
    assert matching_lines(rx, lines) == [20]


def test_rules_on_a_big_text_take_seconds():
    lines = code_lines("\n".join(_texts()) * 60)  # ~2 MB
    t0 = time.perf_counter()
    for rule in RULES:
        rule.detect(lines)
    assert time.perf_counter() - t0 < 4  # ~0.4 s on the dev container; a search per line took ~7 s
