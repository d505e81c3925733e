"""AMD's hipify-perl and hipify-clang, run through the runner seam on copies of the sources.

The user's files are never touched: each batch is copied into a temporary folder and translated there.
hipify-perl runs with ``-quiet-warnings`` (its own warning scan costs ~36 ms a line); the diagnostics shown
are computed by hipwizard from HIPIFY's tables, which also makes them version-aware.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hipwizard.port.translation.backends.base import BackendResult, report
from hipwizard.port.translation.backends.hipify_output import parse_clang_warnings, parse_stats
from hipwizard.port.translation.builtin import BuiltinTranslator, TranslateOptions
from hipwizard.port.translation.scan import SourceFile, decode_source, encode_source
from hipwizard.progress import ProgressFn
from hipwizard.runner import Runner, path_operand

BATCH = 64  # files per hipify-perl call: one Perl start-up per batch


def _option_flags(options: TranslateOptions, dash: str) -> list[str]:
    flags = []
    if options.hip_kernel_execution_syntax:
        flags.append(f"{dash}hip-kernel-execution-syntax")
    if options.roc:
        flags.append(f"{dash}roc")
    if options.experimental:
        flags.append(f"{dash}experimental")
    return flags


def _copy_batch(files: list[SourceFile], folder: Path) -> list[Path]:
    copies = []
    for i, src in enumerate(files):
        # numbered sub-folders keep names unique and short; the suffix is kept (hipify looks at it)
        dest = folder / str(i) / Path(src.path).name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(encode_source(src.text))
        copies.append(dest.absolute())  # absolute: a copy named "-x.cu" or "@x.cu" is never read as an option
    return copies


class HipifyPerlBackend:
    name = "hipify-perl"

    def __init__(self, options: TranslateOptions | None = None, runner: Runner | None = None,
                 executable: str = "hipify-perl"):
        self.options = options or TranslateOptions()
        self.runner = runner
        self.executable = executable
        self._diagnostics = BuiltinTranslator(self.options)

    def available(self) -> bool:
        return self.runner is not None and self.runner.which(self.executable) is not None

    def translate(self, files: list[SourceFile], progress: ProgressFn | None = None) -> list[BackendResult]:
        out: list[BackendResult] = []
        for start in range(0, len(files), BATCH):
            batch = files[start:start + BATCH]
            out.extend(self._run_batch(batch))
            report(progress, min(start + BATCH, len(files)), len(files), batch[-1].path)
        return out

    def _run_batch(self, batch: list[SourceFile]) -> list[BackendResult]:
        with tempfile.TemporaryDirectory(prefix="hipwizard-perl-") as tmp:
            copies = _copy_batch(batch, Path(tmp))
            argv = [self.executable, "-inplace", "-quiet-warnings", "-print-stats",
                    *_option_flags(self.options, "-"), *map(path_operand, copies)]
            assert self.runner is not None  # a backend translates only when available(): it has a runner
            res = self.runner.run(argv, timeout=60 + 2 * len(batch), cwd=tmp)
            stats = parse_stats(res.stderr) if res.stderr else {}
            results = []
            for src, copy in zip(batch, copies, strict=True):
                diags = self._diagnostics.translate(src.text).diagnostics
                if not res.ok:
                    results.append(BackendResult(src, src.text, diags, {}, res.explain()))
                    continue
                text, _ = decode_source(copy.read_bytes())
                results.append(BackendResult(src, text, diags, stats.get(str(copy), {})))
            return results


class HipifyClangBackend:
    """hipify-clang parses the code with clang: exact, but needs CUDA headers (``HIPWIZARD_CUDA_PATH`` or
    ``CUDA_PATH``) and a file that compiles; a file it cannot parse is reported, not guessed at."""

    name = "hipify-clang"

    def __init__(self, options: TranslateOptions | None = None, runner: Runner | None = None,
                 executable: str = "hipify-clang"):
        self.options = options or TranslateOptions()
        self.runner = runner
        self.executable = executable

    def available(self) -> bool:
        return self.runner is not None and self.runner.which(self.executable) is not None

    def translate(self, files: list[SourceFile], progress: ProgressFn | None = None) -> list[BackendResult]:
        cuda_path = os.environ.get("HIPWIZARD_CUDA_PATH") or os.environ.get("CUDA_PATH")
        results = []
        with tempfile.TemporaryDirectory(prefix="hipwizard-clang-") as tmp:
            copies = _copy_batch(files, Path(tmp))
            for i, (src, copy) in enumerate(zip(files, copies, strict=True)):
                out_path = copy.with_name(copy.name + ".hip")
                argv = [self.executable, path_operand(copy), f"-o={out_path}", "--print-stats",
                        *_option_flags(self.options, "--"), "--", "-x", "cuda"]
                if cuda_path:
                    argv.append(f"--cuda-path={cuda_path}")
                assert self.runner is not None  # a backend translates only when available(): it has a runner
                res = self.runner.run(argv, timeout=120, cwd=tmp)
                warnings = parse_clang_warnings(res.stderr).get(str(copy), [])
                stats = parse_stats(res.stderr).get(str(copy), {})
                if res.ok and out_path.exists():
                    text, _ = decode_source(out_path.read_bytes())
                    results.append(BackendResult(src, text, warnings, stats))
                else:
                    results.append(BackendResult(src, src.text, warnings, stats, res.explain()))
                report(progress, i + 1, len(files), src.path)
        shutil.rmtree(tmp, ignore_errors=True)
        return results
