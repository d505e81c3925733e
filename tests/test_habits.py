"""Habits of the test suite itself, checked: an ``assert all(...)`` passes on an empty list, so it must say
what it iterates is not empty (``assert xs and all(...)``); TUI tests wait by condition, not by time."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def vacuous_asserts(root: Path) -> list[str]:
    """``path:line`` of every ``assert all(<generator>)`` under ``root`` whose assert does not also say something
    of the generator's iterable first (``assert xs and all(x ... for x in xs)``, ``len(xs) == 4 and all(...)``)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assert):
                continue
            test = node.test
            guards: list[ast.expr] = []
            if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
                guards, test = test.values[:-1], test.values[-1]
            if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "all"
                    and test.args and isinstance(test.args[0], ast.GeneratorExp)):
                continue
            iterable = ast.dump(test.args[0].generators[0].iter)
            if not any(ast.dump(part) == iterable for g in guards for part in ast.walk(g)):
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_no_assert_all_over_a_maybe_empty_iterable():
    assert vacuous_asserts(TESTS) == []


def test_the_vacuous_assert_rule_fails_on_a_violation(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "def test_a(xs, ys):\n"
        "    assert all(x > 0 for x in xs)\n"           # vacuous
        "    assert xs and all(x > 0 for x in xs)\n"    # guarded
        "    assert ys and all(x > 0 for x in xs)\n"    # guards the wrong list
        "    assert len(xs) == 2 and all(x > 0 for x in xs)\n"  # says how many: fine
        "    assert not any(x for x in xs)\n")           # not an all(): fine
    assert vacuous_asserts(tmp_path) == ["test_x.py:2", "test_x.py:4"]


def sleeps(root: Path) -> list[str]:
    """``path:line`` of every ``time.sleep`` / ``asyncio.sleep`` / ``pilot.pause(<delay>)`` call in the test
    modules under ``root`` (helpers such as a replayed trainer may sleep: they play a program, not a test)."""
    found = []
    for path in sorted(root.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name, owner = node.func.attr, node.func.value
                timed = (name == "sleep" and isinstance(owner, ast.Name) and owner.id in {"time", "asyncio"}) or (
                    name == "pause" and (node.args or node.keywords))
                if timed:
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_tui_tests_wait_by_condition_not_by_time():
    """tests/tui/waiting.py is the one place that may poll (it sleeps between looks at a condition)."""
    assert sleeps(TESTS / "tui") == []


def test_the_sleep_rule_fails_on_a_violation(tmp_path):
    (tmp_path / "test_y.py").write_text(
        "import asyncio, time\n"
        "async def test_b(pilot):\n"
        "    time.sleep(0.2)\n"
        "    await asyncio.sleep(1)\n"
        "    await pilot.pause(0.3)\n"
        "    await pilot.pause()\n")            # a pause with no delay waits for pending messages: fine
    assert sleeps(tmp_path) == ["test_y.py:3", "test_y.py:4", "test_y.py:5"]
