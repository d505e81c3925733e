"""The built-in backend: ``hipwizard.port.translation.builtin`` in process."""

from __future__ import annotations

from hipwizard.port.translation.backends.base import BIG_FILE, BackendResult, report
from hipwizard.port.translation.builtin import BuiltinTranslator, TranslateOptions
from hipwizard.port.translation.scan import SourceFile, is_header
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
            if len(src.text) >= BIG_FILE:  # a big file takes seconds: say which one before starting it
                report(progress, i, len(files), src.path)
            t = self.translator.translate(src.text, header=is_header(src.path))
            out.append(BackendResult(src, t.text, t.diagnostics, t.stats, spans=t.spans, masked_original=t.masked_original))
            report(progress, i + 1, len(files), src.path)
        return out
