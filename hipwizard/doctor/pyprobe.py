"""The Python probe: run as ``python -m hipwizard.doctor.pyprobe`` in a subprocess, prints one JSON object.

It imports torch (the UI process never does) and reports the build (``torch.version.hip`` /
``torch.version.cuda``), the devices with ``gcnArchName`` / capability / memory, and the versions of the
libraries a LLaMA-Factory fine-tune needs, plus LLaMA-Factory's own requirement pins. Every failure is a
value in the JSON (``torch_error``), never a traceback on stdout.

Output keys: python, torch, hip, cuda, device_count, devices[{name, gcnArchName, capability,
total_memory}], torch_error, packages{dist: version or ""}, llamafactory_requires[str].
"""

from __future__ import annotations

import json
import sys
import warnings
from importlib import metadata

# Distributions whose versions the checks look at ("" = not installed).
PACKAGES = (
    "torch", "transformers", "peft", "accelerate", "trl", "datasets", "deepspeed", "flash_attn",
    "bitsandbytes", "llamafactory", "triton", "pytorch-triton-rocm",
)


def _versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for dist in PACKAGES:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            alt = dist.replace("_", "-")
            try:
                out[dist] = metadata.version(alt) if alt != dist else ""
            except metadata.PackageNotFoundError:
                out[dist] = ""
    return out


def _llamafactory_requires() -> list[str]:
    try:
        return [r for r in (metadata.requires("llamafactory") or []) if "extra ==" not in r]
    except metadata.PackageNotFoundError:
        return []


def _torch_facts() -> dict:
    facts: dict = {"torch": "", "hip": "", "cuda": "", "device_count": 0, "devices": [], "torch_error": ""}
    try:
        import torch  # heavy: torch
    except Exception as exc:  # ImportError, or a broken install raising anything at import
        facts["torch_error"] = f"import torch failed: {type(exc).__name__}: {exc}"
        return facts
    facts["torch"] = str(torch.__version__)
    facts["hip"] = str(getattr(torch.version, "hip", None) or "")
    facts["cuda"] = str(getattr(torch.version, "cuda", None) or "")
    try:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception as exc:
        facts["torch_error"] = f"torch.cuda query failed: {type(exc).__name__}: {exc}"
        return facts
    facts["device_count"] = count
    for i in range(count):
        try:
            p = torch.cuda.get_device_properties(i)
            facts["devices"].append({
                "name": str(p.name),
                "gcnArchName": str(getattr(p, "gcnArchName", "") or ""),
                "capability": f"{p.major}.{p.minor}",
                "total_memory": int(p.total_memory),
            })
        except Exception as exc:
            facts["devices"].append({"name": "", "error": f"{type(exc).__name__}: {exc}"})
    return facts


def collect() -> dict:
    """The whole probe answer as a dict (JSON-ready)."""
    data: dict[str, object] = {"python": sys.version.split()[0]}
    data.update(_torch_facts())
    data["packages"] = _versions()
    data["llamafactory_requires"] = _llamafactory_requires()
    return data


def main() -> int:
    warnings.filterwarnings("ignore")
    print(json.dumps(collect()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
