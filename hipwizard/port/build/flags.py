"""A unit's compile command as the flags a hipcc check needs: include folders, macros, the language standard.

``check_flags(command)`` keeps ``-I``/``-isystem``/``-iquote``/``-idirafter``/``-include``/``-D``/``-U``/``-std=``
(either spelling: ``-I dir`` or ``-Idir``) and the language (``-x hip`` as ``-xhip``: it must come before the file,
``language_first`` puts it there), relative folders made absolute from the command's folder, after
nvcc's own spellings were mapped to hipcc's by the build-file translator (``--std c++17``, ``--include-path``,
``--define-macro``, ``-Xcompiler``...). Everything else (outputs, arch, optimisation, warnings) is the check's
own business. Only what decides whether the code compiles is kept, so a command recorded for nvcc, gcc or hipcc
checks the same way.
"""

from __future__ import annotations

import os
import shlex

from hipwizard.port.buildfiles.nvcc import translate_flags

LANGUAGES = frozenset({"hip", "cu", "cuda", "c", "c++", "cpp-output", "c++-cpp-output"})
_PATH_FLAGS = ("-I", "-isystem", "-iquote", "-idirafter", "-include")
_VALUE_FLAGS = {"--include-path": "-I", "--define-macro": "-D", "--undefine-macro": "-U", "--pre-include": "-include",
                "--system-include": "-isystem"}


def _nvcc_mapped(args: tuple[str, ...]) -> list[str]:
    joined = shlex.join(args)
    notes: list = []
    mapped = translate_flags(joined, notes, nvcc_line=bool(args) and args[0].endswith("nvcc"))
    try:
        return shlex.split(mapped)
    except ValueError:
        return list(args)


def check_flags(args: tuple[str, ...], directory: str) -> list[str]:
    """The include/macro/standard flags of a compile command (see the module docstring)."""
    words = _nvcc_mapped(args)[1:]
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        name, _, value = w.partition("=") if w.startswith("--") else (w, "", "")
        if name in _VALUE_FLAGS:
            if not value and i + 1 < len(words):
                i += 1
                value = words[i]
            flag = _VALUE_FLAGS[name]
            out.append(flag + (_absolute(value, directory) if flag in _PATH_FLAGS else value))
        elif w in _PATH_FLAGS and i + 1 < len(words):
            i += 1
            out += [w, _absolute(words[i], directory)] if w != "-I" else [f"-I{_absolute(words[i], directory)}"]
        elif w == "-x" and i + 1 < len(words):
            i += 1
            if words[i] in LANGUAGES:  # a build's text is data: only a language a compiler knows is passed on
                out.append(f"-x{words[i]}")
        elif w.startswith("-x") and w[2:] in LANGUAGES:
            out.append(w)
        elif w in ("-D", "-U") and i + 1 < len(words):
            i += 1
            out.append(w + words[i])
        elif w.startswith(("-D", "-U")) or w.startswith("-std="):
            out.append(w)
        else:
            prefix = next((p for p in ("-isystem", "-iquote", "-idirafter", "-I") if w.startswith(p) and w != p), None)
            if prefix is not None:
                out.append(prefix + _absolute(w[len(prefix):], directory))
        i += 1
    return list(dict.fromkeys(out))


def language_first(flags: list[str]) -> tuple[list[str], list[str]]:
    """(the ``-x<lang>`` flags, the others): a compiler reads ``-x`` only for the files after it."""
    lang = [f for f in flags if f.startswith("-x")]
    return lang, [f for f in flags if not f.startswith("-x")]


def _absolute(path: str, directory: str) -> str:
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(directory, path))
