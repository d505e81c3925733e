"""Editing one kernel's spec as a form (the Parity screen's ``e``): its fields as text, checked, written back.

The form's fields are plain text, one per spec field the user most often edits: the dimensions' values
(``N=4, C=64``), which of them are swept (``N, C``; the innermost last), the launch geometry (``grid`` and
``block``, three comma-separated C++ expressions each), dynamic shared memory, the reference (a torch
expression, ``reference.py``) and each buffer's extent. ``edit_kernel_spec`` checks every field (a one-line
``UserError`` whose ``field`` names the form field) and writes the spec file atomically with the draft kept, so a
redraft keeps these edits as it keeps hand edits of the JSON file.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hipwizard.atomic import atomic_write_text
from hipwizard.errors import UserError
from hipwizard.parity.kernels.project import load_specs
from hipwizard.parity.kernels.reference import check_expression
from hipwizard.parity.kernels.source import split_top
from hipwizard.parity.kernels.spec import KernelSpec


def spec_fields(spec: KernelSpec) -> dict[str, str]:
    """The form's fields for ``spec`` (field -> text)."""
    fields = {"dims": ", ".join(f"{k}={v}" for k, v in spec.dims.items()), "swept": ", ".join(spec.swept),
              "grid": ", ".join(spec.grid), "block": ", ".join(spec.block), "shared_bytes": spec.shared_bytes,
              "reference": spec.reference}
    fields.update({f"extent:{b.name}": b.extent for b in spec.buffers})
    return fields


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _expr(field: str, text: str) -> str:
    text = text.strip()
    if not text:
        raise UserError(f"{field}: empty (a C++ expression over the dimensions)", field=field)
    if not _balanced(text) or ";" in text or "\n" in text:
        raise UserError(f"{field}: {text!r} is not one C++ expression (brackets, ';')", field=field)
    return text


def apply_fields(spec: KernelSpec, fields: dict[str, str]) -> KernelSpec:
    """``spec`` with the form's ``fields`` applied, each checked; raises ``UserError(field=...)``."""
    dims = dict(spec.dims)
    if "dims" in fields:
        dims = {}
        for part in [p.strip() for p in fields["dims"].split(",") if p.strip()]:
            name, eq, value = (x.strip() for x in part.partition("="))
            if not eq or name not in spec.dims:
                raise UserError(f"dims: {part!r} is not NAME=VALUE of a dimension ({', '.join(spec.dims)})",
                                field="dims")
            if not value.isdigit() or int(value) <= 0:
                raise UserError(f"dims: {name} = {value!r}: a whole number above 0", field="dims")
            dims[name] = int(value)
        missing = [n for n in spec.dims if n not in dims]
        if missing:
            raise UserError(f"dims: give a value for {', '.join(missing)}", field="dims")
    swept = spec.swept
    if "swept" in fields:
        swept = [n.strip() for n in fields["swept"].split(",") if n.strip()]
        unknown = [n for n in swept if n not in dims]
        if unknown or len(set(swept)) != len(swept):
            raise UserError(f"swept: {', '.join(unknown) or 'a name twice'} — swept names are dimensions "
                            f"({', '.join(dims)})", field="swept")
    geometry = {}
    for key in ("grid", "block"):
        if key in fields:
            parts = [p.strip() for p in split_top(fields[key])]
            if len(parts) != 3 or not all(parts):
                raise UserError(f"{key}: three comma-separated expressions (x, y, z), got {len(parts)}", field=key)
            geometry[key] = [_expr(key, p) for p in parts]
    shared = _expr("shared_bytes", fields["shared_bytes"]) if "shared_bytes" in fields else spec.shared_bytes
    buffers = []
    for b in spec.buffers:
        key = f"extent:{b.name}"
        buffers.append(replace(b, extent=_expr(key, fields[key])) if key in fields else b)
    new = replace(spec, dims=dims, swept=swept, grid=geometry.get("grid", spec.grid),
                  block=geometry.get("block", spec.block), shared_bytes=shared, buffers=buffers,
                  reference=fields.get("reference", spec.reference).strip())
    if why := check_expression(new):
        raise UserError(why, field="reference")
    return new


def edit_kernel_spec(spec_file: Path, key: str, fields: dict[str, str]) -> KernelSpec:
    """Apply the form's ``fields`` to kernel ``key`` (``file::kernel``) of ``spec_file`` and write it back."""
    entries = load_specs(spec_file)
    if key not in entries:
        raise UserError(f"{key} is not in {spec_file} (check the kernels first: L)", field="kernel")
    try:
        spec = KernelSpec.from_dict(entries[key]["spec"])
    except (TypeError, KeyError) as exc:
        raise UserError(f"the spec of {key} does not read: {exc}", field="spec") from exc
    new = apply_fields(spec, fields)
    doc = json.loads(spec_file.read_text(encoding="utf-8"))
    doc["kernels"][key]["spec"] = new.to_dict()
    atomic_write_text(spec_file, json.dumps(doc, indent=1) + "\n")
    return new


def saved_spec(spec_file: Path, key: str) -> KernelSpec | None:
    """Kernel ``key``'s spec as the spec file holds it (None when there is none)."""
    entry = load_specs(spec_file).get(key)
    try:
        return KernelSpec.from_dict(entry["spec"]) if entry else None
    except (TypeError, KeyError):
        return None
