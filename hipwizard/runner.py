"""The one seam to the outside world: run an external program from an argv list.

Every probe (rocminfo, amd-smi, nvidia-smi, hipcc, hipify-perl, ...) goes through a ``Runner``.
Production uses ``SubprocessRunner``; tests and ``doctor --replay`` use runners that answer from
recorded real outputs, so the parsing and checking code under test is the same in both.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Literal, Mapping, Protocol, Sequence

RunStatus = Literal["ok", "failed", "missing", "timeout", "error"]


@dataclass(frozen=True)
class RunResult:
    """What a program did: its exit code and output, or why it could not run."""

    argv: tuple[str, ...]
    status: RunStatus
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def output(self) -> str:
        """stdout and stderr together (some tools print their data to stderr)."""
        if self.stdout and self.stderr:
            return self.stdout + "\n" + self.stderr
        return self.stdout or self.stderr

    def explain(self) -> str:
        """One line saying what happened, for reports."""
        cmd = " ".join(self.argv)
        if self.status == "ok":
            return f"`{cmd}` succeeded"
        if self.status == "missing":
            return f"`{self.argv[0]}` is not installed (not on PATH)"
        if self.status == "timeout":
            return f"`{cmd}` did not answer within {self.note or 'its timeout'}"
        if self.status == "failed":
            tail = (self.stderr or self.stdout).strip().splitlines()
            last = tail[-1] if tail else "no output"
            return f"`{cmd}` exited with code {self.returncode}: {last[:200]}"
        return f"`{cmd}` could not run: {self.note}"


class Runner(Protocol):
    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> RunResult: ...

    def which(self, name: str) -> str | None: ...


def path_operand(path: str | os.PathLike[str]) -> str:
    """A file name as a program's operand that no program can read as an option or a response file.

    A user's file may be named ``-o.cu`` (an option to every compiler) or ``@opts.cu`` (clang and hipcc read
    ``opts.cu`` as more options, even after ``--``). The name is passed absolute, or relative with ``./``
    in front, so it never starts with ``-`` or ``@``.
    """
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if os.path.isabs(text) or text.startswith(("./", "../")):
        return text
    return "./" + text


# Where ROCm installs its tools when they are not on PATH.
EXTRA_TOOL_DIRS = ("/opt/rocm/bin", "/opt/rocm/llvm/bin")


@dataclass
class SubprocessRunner:
    """Runs real programs. A program that hangs is killed with its whole process group."""

    extra_dirs: Sequence[str] = field(default_factory=lambda: EXTRA_TOOL_DIRS)

    def which(self, name: str) -> str | None:
        if os.sep in name:
            return name if os.access(name, os.X_OK) else None
        found = shutil.which(name)
        if found:
            return found
        for d in self.extra_dirs:
            cand = os.path.join(d, name)
            if os.access(cand, os.X_OK):
                return cand
        return None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None) -> RunResult:
        argv = tuple(str(a) for a in argv)
        if not argv:
            return RunResult(argv, "error", note="empty command")
        exe = self.which(argv[0])
        if exe is None:
            return RunResult(argv, "missing", note=f"{argv[0]} not found")
        full_env = None
        if env is not None:
            full_env = dict(os.environ)
            full_env.update(env)
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                (exe, *argv[1:]),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=full_env,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            return RunResult(argv, "error", note=str(exc))
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            return RunResult(
                argv, "timeout", None, _decode(out), _decode(err),
                time.monotonic() - start, note=f"{timeout:g} s",
            )
        status: RunStatus = "ok" if proc.returncode == 0 else "failed"
        return RunResult(argv, status, proc.returncode, _decode(out), _decode(err), time.monotonic() - start)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _decode(data: bytes | None) -> str:
    if not data:
        return ""
    return data.decode("utf-8", errors="replace")
