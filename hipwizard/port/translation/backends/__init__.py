"""Translation backends behind one interface: AMD's hipify-clang / hipify-perl when installed, else built-in.

``choose_backend(name, options, runner)`` returns a ``Backend``: ``"auto"`` picks hipify-clang, then
hipify-perl, then the built-in translator (the first one available); a named backend that is not installed
is a ``UserError`` saying how to get it.
"""

from __future__ import annotations

from hipwizard.errors import UserError
from hipwizard.port.translation.backends.base import Backend, BackendResult
from hipwizard.port.translation.backends.builtin_backend import BuiltinBackend
from hipwizard.port.translation.backends.hipify_tools import HipifyClangBackend, HipifyPerlBackend
from hipwizard.port.translation.builtin import TranslateOptions
from hipwizard.runner import Runner, SubprocessRunner

BACKENDS = ("auto", "builtin", "hipify-perl", "hipify-clang")


def choose_backend(name: str = "auto", options: TranslateOptions | None = None,
                   runner: Runner | None = None) -> Backend:
    options = options or TranslateOptions()
    runner = runner or SubprocessRunner()
    if name not in BACKENDS:
        raise UserError(f"unknown backend {name!r} (choose one of {', '.join(BACKENDS)})")
    if name == "builtin":
        return BuiltinBackend(options)
    tools: dict[str, Backend] = {"hipify-clang": HipifyClangBackend(options, runner),
                                 "hipify-perl": HipifyPerlBackend(options, runner)}
    if name == "auto":
        for backend in tools.values():
            if backend.available():
                return backend
        return BuiltinBackend(options)
    backend = tools[name]
    if not backend.available():
        raise UserError(f"{name} is not installed (looked on PATH and in /opt/rocm/bin); "
                        "install ROCm's hipify package or use --backend builtin")
    return backend


__all__ = ["BACKENDS", "Backend", "BackendResult", "BuiltinBackend", "HipifyClangBackend", "HipifyPerlBackend",
           "choose_backend"]
