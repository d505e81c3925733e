"""The environment fingerprint: what machine and software an artefact came from, stamped on each of them.

Derived from the doctor's last report of the workspace (so it is computed once per machine, by the doctor:
``state.environment_stamp(ws)``) and stamped as ``"environment": {...}`` on the review state, the written-tree
record, parity comparisons, each training run's manifest and each calibration. Two stamps compare field by
field (``stamp_differences``)::

    {"id": "3f2a9c1e0b7d",                    # a short hash of the fields below (same machine + software)
     "gpu": "AMD Instinct MI300X", "arch": "gfx942", "gpus": 8, "vram_gib": 192,
     "rocm": "6.1.2", "hip": "6.1.40093", "driver": "6.7.0", "nvidia_driver": "",
     "torch": "2.4.0+rocm6.1", "torch_build": "rocm 6.1" | "cuda 12.4" | "cpu" | "",
     "python": "3.11.7", "packages": {"deepspeed": "0.15.1", ...},
     "hipwizard": "0.x", "origin": "live" | "replay of DIR" | "no doctor report"}

No host names, user names or paths: a stamp can go into a report shared outside the team as it is. No probing
happens here, and nothing heavy is imported.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

from hipwizard import __version__, jsonread
from hipwizard.doctor.models import DoctorReport

PACKAGES = ("deepspeed", "flash_attn", "flash-attn", "llamafactory", "transformers", "peft", "accelerate",
            "liger-kernel", "triton", "pytorch-triton-rocm")
STAMP_LABELS = {"gpu": "GPU", "arch": "gfx arch", "gpus": "GPU count", "vram_gib": "VRAM per GPU (GiB)",
          "rocm": "ROCm", "hip": "HIP runtime", "driver": "amdgpu driver", "nvidia_driver": "NVIDIA driver",
          "torch": "PyTorch", "torch_build": "PyTorch build", "python": "Python", "hipwizard": "hipwizard"}
IDENTITY = tuple(STAMP_LABELS) + ("packages",)  # the fields the id hashes (not "origin")


def stamp_from_report(report: DoctorReport) -> dict:
    """The fingerprint of a ``DoctorReport``."""
    env = report.env
    gpus = list(getattr(env, "gpus", []) or [])
    first = next((g for g in gpus if g.vendor == "amd"), gpus[0] if gpus else None)
    torch = env.torch
    build = (f"rocm {torch.hip}" if torch.hip else f"cuda {torch.cuda}" if torch.cuda
             else "cpu" if torch.torch else "")
    packages = {name: v for name in PACKAGES if (v := (torch.packages or {}).get(name))}
    vram = first.vram_bytes if first is not None else None
    fp = {"gpu": first.name if first else "", "arch": (first.gfx or first.compute_capability) if first else "",
          "gpus": len(gpus), "vram_gib": round(vram / 2**30) if vram else None,
          "rocm": env.rocm_version or "", "hip": env.hip_version or "", "driver": env.amdgpu_driver or "",
          "nvidia_driver": env.nvidia_driver or "", "torch": torch.torch or "", "torch_build": build,
          "python": torch.python or "", "packages": packages,
          "hipwizard": report.hipwizard_version or __version__, "origin": report.origin or "live"}
    return _with_id(fp)


def bare_stamp() -> dict:
    """A fingerprint with what this process knows when the doctor has not run: hipwizard and Python only."""
    return _with_id({"gpu": "", "arch": "", "gpus": None, "vram_gib": None, "rocm": "", "hip": "", "driver": "",
                     "nvidia_driver": "", "torch": "", "torch_build": "", "python": platform.python_version(),
                     "packages": {}, "hipwizard": __version__, "origin": "no doctor report"})


def _with_id(fp: dict) -> dict:
    canon = json.dumps({k: fp.get(k) for k in IDENTITY}, sort_keys=True)
    return {"id": hashlib.sha256(canon.encode()).hexdigest()[:12], **fp}


def stamp_differences(a: dict, b: dict) -> list[tuple[str, str, str]]:
    """(label, a's value, b's value) for every field that differs; ``[]`` for the same environment."""
    rows = []
    for key, label in STAMP_LABELS.items():
        va, vb = a.get(key), b.get(key)
        if (va or None) != (vb or None):
            rows.append((label, _show(va), _show(vb)))
    pa, pb = a.get("packages") or {}, b.get("packages") or {}
    for name in sorted(set(pa) | set(pb)):
        if pa.get(name) != pb.get(name):
            rows.append((name, _show(pa.get(name)), _show(pb.get(name))))
    return rows


def _show(value) -> str:
    return "—" if value in (None, "") else str(value)


def describe_stamp(fp: dict) -> str:
    """One line: GPU x count (arch), ROCm/HIP, torch build; what a stamp says at a glance."""
    if not fp:
        return "environment not recorded"
    gpu = f"{fp.get('gpus') or 0} x {fp.get('gpu') or 'GPU?'}" if fp.get("gpus") else "no GPU found"
    arch = f" ({fp['arch']})" if fp.get("arch") else ""
    stack = ", ".join(x for x in (f"ROCm {fp['rocm']}" if fp.get("rocm") else "",
                                  f"HIP {fp['hip']}" if fp.get("hip") else "",
                                  f"torch {fp['torch']}" if fp.get("torch") else "") if x)
    tail = f" [{fp.get('origin')}]" if fp.get("origin") and fp.get("origin") != "live" else ""
    return f"{gpu}{arch}" + (f"; {stack}" if stack else "") + f"; env {fp.get('id', '?')}{tail}"


def read_stamp(path: str | Path) -> dict:
    """The ``environment`` stamped on an artefact: a JSON file (review state, written-tree record, parity
    report, run manifest), a parity capture (``.safetensors``), a run folder (its ``run.json``), or an output folder (its ``.written`` record).
    Raises ``ValueError`` with a one-line reason when there is none."""
    p = Path(path).expanduser()
    candidates = [p]
    if p.is_dir():
        candidates = [p / "run.json", p / "manifest.json", p.parent / f"{p.name}.written" / "manifest.json",
                      p.parent / f"{p.name}.review.json"]
    for c in candidates:
        if not c.is_file():
            continue
        try:
            data = _safetensors_meta(c) if c.suffix == ".safetensors" else jsonread.read_json(c)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{c} cannot be read ({exc})") from None
        stamp = _find(data)
        if stamp:
            return stamp
    raise ValueError(f"{p} carries no environment stamp (made before hipwizard stamped artefacts, or not one)")


def _safetensors_meta(path: Path) -> dict:
    """The ``hipwizard`` metadata of a parity capture (a safetensors file: an 8-byte length, then a JSON
    header whose ``__metadata__`` holds it as a JSON string), read without loading any tensor."""
    with open(path, "rb") as fh:
        size = int.from_bytes(fh.read(8), "little")
        if not 0 < size <= 100_000_000:
            raise ValueError("not a safetensors file")
        header = jsonread.loads(fh.read(size))
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    meta = metadata.get("hipwizard") if isinstance(metadata, dict) else None  # a list or a number: no stamp
    return jsonread.loads(meta) if isinstance(meta, str) else {}


def _find(data) -> dict | None:
    if isinstance(data, dict):
        env = data.get("environment")
        if isinstance(env, dict) and "id" in env:
            return env
        for key in ("meta", "manifest", "reference", "candidate"):
            found = _find(data.get(key)) if key in data else None
            if found:
                return found
    return None
