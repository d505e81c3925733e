"""The speed knobs beyond batch, checkpointing and DeepSpeed: what is installed, and what must not be combined.

- ``KnobAvailability.gather()``: Liger (``liger_kernel``), FlashAttention-2 (``flash_attn``: on ROCm the CK or
  Triton build, same module; ``fa2_build`` says which), Unsloth, the platform (``hipwizard.gpu.detect_platform``)
  and the library versions, from package metadata and module specs only (nothing is imported).
- ``known_bad()``: the combinations in ``assets/train_known_bad.yaml`` — each with why, the versions it was
  seen on and a source. ``exclusion(config, ...)`` returns the first that matches a config, and
  ``KnownBad.line(versions)`` says it in one line, noting when the installed versions differ from those seen.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import Any, Mapping

import yaml

from hipwizard.gpu import detect_platform
from hipwizard.paths import assets_dir
from hipwizard.train.config.train_config import TrainConfig

KNOWN_BAD_FILE = "train_known_bad.yaml"
_DIST = {"torch": "torch", "triton": "triton", "liger-kernel": "liger-kernel", "llamafactory": "llamafactory",
         "flash-attn": "flash-attn", "transformers": "transformers", "unsloth": "unsloth"}


@dataclass(frozen=True)
class KnownBad:
    id: str
    when: dict[str, Any]
    why: str
    seen_on: dict[str, str]
    source: str
    platform: str | None = None

    def matches(self, config: TrainConfig, platform: str | None) -> bool:
        if self.platform and platform and self.platform != platform:
            return False
        return all(getattr(config, k, None) == v for k, v in self.when.items())

    def line(self, versions: Mapping[str, str] | None = None) -> str:
        """``enable_liger_kernel + torch_compile: <why> (seen on torch 2.11.0, ...; here torch 2.14.1)``."""
        seen = ", ".join(f"{k} {v}" for k, v in self.seen_on.items())
        here = ", ".join(f"{k} {versions[k]}" for k in self.seen_on if versions and versions.get(k)
                         and not versions[k].startswith(self.seen_on[k].split("+")[0]))
        combo = " + ".join(k if v is True else f"{k}={v}" for k, v in self.when.items())
        return (f"{combo}: {self.why} (seen on {seen}" + (f"; not retested here: {here}" if here else "")
                + f"; source: {self.source})")


@lru_cache(maxsize=1)
def known_bad() -> tuple[KnownBad, ...]:
    data = yaml.safe_load((assets_dir() / KNOWN_BAD_FILE).read_text(encoding="utf-8")) or []
    return tuple(KnownBad(d["id"], dict(d["when"]), d["why"], {k: str(v) for k, v in d.get("seen_on", {}).items()},
                          d.get("source", ""), d.get("platform")) for d in data)


def exclusion(config: TrainConfig, platform: str | None = None) -> KnownBad | None:
    """The first known-bad combination ``config`` contains (None when it contains none)."""
    return next((k for k in known_bad() if k.matches(config, platform)), None)


def installed_versions() -> dict[str, str]:
    out = {}
    for key, dist in _DIST.items():
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def _found(mod: str) -> bool:
    try:
        return importlib.util.find_spec(mod) is not None
    except (ImportError, ValueError):
        return False


def fa2_build(platform: str | None, env: dict[str, str] | None = None) -> str:
    """Which FlashAttention-2 kernels ``flash_attn`` runs here ("" when it is not installed): on ROCm the
    Composable Kernel build (the compiled ``flash_attn_2_cuda``) unless FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE or
    that module is missing, then the Triton one (flash_attn_interface.py picks the same way); elsewhere CUDA."""
    if not _found("flash_attn"):
        return ""
    if platform != "rocm":
        return "CUDA"
    triton = (env if env is not None else os.environ).get("FLASH_ATTENTION_TRITON_AMD_ENABLE", "FALSE") == "TRUE"
    return "Triton" if triton or not _found("flash_attn_2_cuda") else "CK"


@dataclass(frozen=True)
class KnobAvailability:
    """Which optional kernels the advisor may propose on this machine, and the versions (for the lines)."""

    liger: bool = False
    fa2: bool = False
    compile: bool = True
    platform: str | None = None  # "rocm", "cuda", "cpu"; None: unknown (platform-only knobs are not offered)
    versions: dict[str, str] = field(default_factory=dict)
    unsloth: bool = False  # the unsloth package (use_unsloth; NVIDIA only)
    fa2_build: str = ""  # "CUDA", "CK" or "Triton" (ROCm), "" unknown

    @classmethod
    def gather(cls, platform: str | None = None) -> "KnobAvailability":
        platform = platform or detect_platform()
        build = fa2_build(platform)
        return cls(liger=_found("liger_kernel"), fa2=bool(build), compile=_found("torch"), platform=platform,
                   versions=installed_versions(), unsloth=_found("unsloth"), fa2_build=build)

    @classmethod
    def everything(cls, platform: str | None = None) -> "KnobAvailability":
        """Every knob allowed (planning for another machine, tests); platform-only ones only on ``platform``."""
        return cls(True, True, True, platform, {}, unsloth=True,
                   fa2_build={"rocm": "CK", "cuda": "CUDA"}.get(platform or "", ""))
