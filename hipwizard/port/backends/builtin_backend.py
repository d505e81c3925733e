"""The built-in backend: ``hipwizard.port.builtin`` in process."""

from __future__ import annotations

from hipwizard.port.backends.base import BackendResult, report
from hipwizard.port.builtin import BuiltinTranslator, TranslateOptions
from hipwizard.port.scan import SourceFile
from hipwizard.progress import ProgressFn


class BuiltinBackend:
    name = "builtin"

    def __init__(self, options: TranslateOptions | None = None):
        self.translator = BuiltinTranslator(options)

    def available(self) -> bool:
        return True

    def translate(self, files: list[SourceFile], progress: ProgressFn | None = None) -> list[BackendResult]:
        out = []
        for i, src in enumerate(files):
            t = self.translator.translate(src.text)
            out.append(BackendResult(src, t.text, t.diagnostics, t.stats))
            report(progress, i + 1, len(files), src.path)
        return out
