"""A tree's kernels and their specs, and the spec file in the workspace (edited by the user, kept on redraft).

The spec file (``kernels.json`` in the workspace's parity folder) holds, per kernel, the spec the user may edit
and the draft it came from. Redrafting (after the source or the port changed) keeps every field the user changed
(it differs from the saved draft) and takes the new draft's value for the others.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from hipwizard import port as port_step
from hipwizard.atomic import atomic_write_text
from hipwizard.errors import UserError
from hipwizard.parity.kernels.find import find_kernels, find_launches
from hipwizard.parity.kernels.source import masked
from hipwizard.parity.kernels.spec import FLOAT_TYPES, INT_TYPES, KernelSpec, draft, source_literals

SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hip", ".h", ".hpp")
SPEC_FILE = "kernels.json"


@dataclass
class FileSpecs:
    rel: str  # the path relative to the tree
    path: Path
    specs: list[KernelSpec]
    unit: str = ""  # the translation unit a driver includes (relative): the file itself, or a source including it

    @property
    def unit_rel(self) -> str:
        return self.unit or self.rel


HEADERS = (".h", ".cuh", ".hpp", ".hxx", ".inc")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def _includer(rel: str, texts: dict[str, tuple[Path, str]]) -> str:
    """A source file of the tree that includes header ``rel`` (same folder first): its macros and types come first
    there, as the kernel was compiled in the project."""
    name = rel.rsplit("/", 1)[-1]
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    found = [r for r, (_, t) in texts.items() if not r.endswith(HEADERS) and "#" in t
             and any(inc.rsplit("/", 1)[-1] == name for inc in _INCLUDE.findall(t))]
    found.sort(key=lambda r: (not r.startswith(folder + "/") if folder else "/" in r, r))
    return found[0] if found else ""


def draft_tree(root: Path) -> list[FileSpecs]:
    """Every file of ``root`` defining a ``__global__`` kernel, with a drafted spec per kernel. Launch sites are
    looked up in the same file first, then anywhere in the tree."""
    root = root.resolve()
    texts: dict[str, tuple[Path, str]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            texts[path.relative_to(root).as_posix()] = (path, text)
    found = {rel: find_kernels(text, rel) for rel, (_, text) in texts.items() if "__global__" in text}
    found = {rel: ks for rel, ks in found.items() if ks}
    names = {k.name for ks in found.values() for k in ks}
    sites: dict[str, list] = {}
    for rel, (_, text) in texts.items():
        if "<<<" in text or "hipLaunchKernelGGL" in text:
            for s in find_launches(text, rel, names):
                sites.setdefault(s.kernel, []).append(s)
    types = type_aliases(texts.values())
    out = []
    for rel, kernels in found.items():
        path, text = texts[rel]
        literals = source_literals(masked(text))
        specs = []
        local = {**types, **build_aliases(root, rel)}
        for k in kernels:
            own = [s for s in sites.get(k.name, []) if s.path == rel] or sites.get(k.name, [])
            specs.append(draft(k, own[0] if own else None, literals, local))
        out.append(FileSpecs(rel, path, specs, _includer(rel, texts) if rel.endswith(HEADERS) else ""))
    return out


_TYPEDEF = re.compile(r"\btypedef\s+((?:unsigned\s+|signed\s+|long\s+|short\s+)*[A-Za-z_]\w*)\s+([A-Za-z_]\w*)\s*;"
                      r"|\busing\s+([A-Za-z_]\w*)\s*=\s*((?:unsigned\s+|signed\s+|long\s+)*[A-Za-z_]\w*)\s*;"
                      r"|^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+((?:unsigned\s+|signed\s+|long\s+)*"
                      r"(?:float|double|int|char|short|long|half|__half|__nv_bfloat16))[ \t]*$", re.M)


def type_aliases(texts) -> dict[str, str]:
    """The tree's own names for number types (``typedef float dfloat;``, ``using index_t = int;``,
    ``#define real double``), resolved through each other."""
    out: dict[str, str] = {}
    for _, text in texts:
        if "typedef" not in text and "using" not in text and "define" not in text:
            continue
        for m in _TYPEDEF.finditer(masked(text)):
            old, new = (m.group(1), m.group(2)) if m.group(2) else (m.group(4), m.group(3)) if m.group(3) else (
                m.group(6), m.group(5))
            out.setdefault(new, " ".join(old.split()))
    for _ in range(3):
        out = {k: out.get(v, v) for k, v in out.items()}
    return out


def build_aliases(root: Path, rel: str) -> dict[str, str]:
    """Number types the project's build file defines for ``rel`` (``-Ddfloat=float`` in a Makefile)."""
    flags, _where = port_step.buildfile_flags(root, rel)
    out = {}
    for f in flags:
        m = re.fullmatch(r"-D([A-Za-z_]\w*)=((?:unsigned |signed |long )*\w+)", f)
        if m and (m.group(2) in FLOAT_TYPES or m.group(2) in INT_TYPES):
            out[m.group(1)] = m.group(2)
    return out


def merge(saved: dict | None, new_draft: KernelSpec) -> KernelSpec:
    """The new draft with the user's edits kept: a field whose saved value differs from its saved draft."""
    if not saved:
        return new_draft
    user, old = saved.get("spec") or {}, saved.get("draft") or {}
    fresh = new_draft.to_dict()
    for key, value in user.items():
        if key in fresh and old.get(key) != value:
            fresh[key] = value
    try:
        return KernelSpec.from_dict(fresh)
    except TypeError as exc:
        raise UserError(f"the spec of {new_draft.kernel} does not read: {exc}", field="spec") from exc


def spec_key(spec: KernelSpec) -> str:
    return f"{spec.file}::{spec.kernel}"


def load_specs(path: Path) -> dict[str, dict]:
    """The spec file's entries (key -> {"spec", "draft"}); {} when there is none."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} does not read as JSON: {exc}", field="spec") from exc
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), dict):
        raise UserError(f"{path} is not a kernel spec file (no 'kernels' object)", field="spec")
    return data["kernels"]


def save_specs(path: Path, files: list[FileSpecs], drafts: dict[str, KernelSpec], original: Path,
               port: Path | None) -> None:
    """Write the spec file: each kernel's spec (edits kept) and the draft it was merged with."""
    kernels = {spec_key(s): {"spec": s.to_dict(), "draft": drafts[spec_key(s)].to_dict()}
               for f in files for s in f.specs}
    doc = {"written_by": "hipwizard parity kernels", "original": str(original), "port": str(port or ""),
           "kernels": kernels}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def specs_for(original: Path, spec_file: Path) -> tuple[list[FileSpecs], dict[str, KernelSpec]]:
    """Draft ``original``'s kernels and merge the user's edits from ``spec_file``: (merged files, drafts by key)."""
    files = draft_tree(original)
    saved = load_specs(spec_file)
    drafts = {spec_key(s): s for f in files for s in f.specs}
    for f in files:
        f.specs = [merge(saved.get(spec_key(s)), s) for s in f.specs]
    return files, drafts
