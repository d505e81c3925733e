"""Replay the shared fixture files (``# ---- stdout ----`` / ``# ---- stderr ----`` layout) as RunResults."""

from __future__ import annotations

from pathlib import Path

from hipwizard.runner import RunResult

FIX = Path(__file__).parent.parent / "fixtures" / "rocm"


def sections(name: str) -> tuple[str, str]:
    """(stdout, stderr) of a recorded fixture file."""
    text = (FIX / name).read_text(encoding="utf-8")
    if "# ---- stdout ----" not in text:
        body = [ln for ln in text.splitlines(keepends=True) if not ln.startswith("# ")]
        return "".join(body), ""
    _, rest = text.split("# ---- stdout ----\n", 1)
    out, _, err = rest.partition("# ---- stderr ----\n")
    return out, err


def section(name: str, marker: str) -> str:
    """The block after ``## marker`` (up to the next ``## ``), with any ``$ command`` prompt lines dropped."""
    text = (FIX / name).read_text(encoding="utf-8")
    block = text.split(f"## {marker}\n", 1)[1].split("\n## ", 1)[0]
    return "".join(ln for ln in block.splitlines(keepends=True) if not ln.startswith(("$ ", "> ")))


class DictRunner:
    """A Runner answering argv[0] -> RunResult; anything else is 'missing'. Records the calls."""

    def __init__(self, answers: dict[str, RunResult | list[RunResult]]):
        self.answers = answers
        self.calls: list[tuple[str, ...]] = []

    def which(self, name):
        return name if name in self.answers else None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None):
        argv = tuple(argv)
        self.calls.append(argv)
        ans = self.answers.get(argv[0])
        if ans is None:
            return RunResult(argv, "missing", note="not installed")
        if isinstance(ans, list):
            return ans.pop(0) if len(ans) > 1 else ans[0]
        return ans


def ok(argv0: str, stdout: str, stderr: str = "", rc: int = 0) -> RunResult:
    return RunResult((argv0,), "ok" if rc == 0 else "failed", rc, stdout, stderr)
