"""The compatibility matrix (``assets/compat_matrix.yaml``) and the questions the checks ask of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from hipwizard.doctor.read.versions import major_minor
from hipwizard.paths import assets_dir


@dataclass(frozen=True)
class GfxFacts:
    gfx: str
    family: str
    products: tuple[str, ...]
    bf16: str  # native | slow | none | unknown
    flash_attn: str  # ck | triton | none | unknown
    retired_in: str = ""
    min_rocm: str = ""  # first ROCm line that supports it for compute
    fp8: str = "unknown"  # ocp | fnuz | none | unknown

    def needs(self) -> str:
        """What this arch needs, in words, e.g. 'MI350X/MI355X (gfx950, CDNA4) needs ROCm 7.0 or newer'."""
        names = "/".join(p for p in self.products[:2] if "(" not in p) or self.gfx
        return f"{names} ({self.gfx}, {self.family}) needs ROCm {self.min_rocm or '?'} or newer"

    def precision(self) -> str:
        """bf16 / FP8 / FlashAttention backend of this arch, in words."""
        fp8 = {"ocp": "FP8 (OCP e4m3/e5m2)", "fnuz": "FP8 (FNUZ variants)", "none": "no FP8"}.get(self.fp8, "FP8 unknown")
        bf16 = {"native": "native bf16", "slow": "slow bf16", "none": "no bf16"}.get(self.bf16, "bf16 unknown")
        fa = {"ck": "FlashAttention-2 CK backend", "triton": "FlashAttention-2 Triton backend",
              "none": "no FlashAttention backend"}.get(self.flash_attn, "FlashAttention unknown")
        return f"{bf16}, {fp8}, {fa}"


@dataclass
class CompatMatrix:
    rocm: dict[str, dict[str, Any]]
    gfx: dict[str, dict[str, Any]]
    target: dict[str, Any]
    torch_rocm: dict[str, list[str]]
    libraries: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # source id -> URL

    # --- gfx -----------------------------------------------------------------------------------
    def gfx_facts(self, gfx: str) -> GfxFacts | None:
        """Facts of a known target; None for a name the matrix does not know."""
        data = self.gfx.get(gfx.lower())
        if data is None:
            if gfx.lower().startswith("gfx10"):  # RDNA1/2: no bf16 (compat facts)
                return GfxFacts(gfx, "RDNA1/2", (), "none", "none", fp8="none")
            return None
        return GfxFacts(
            gfx, str(data.get("family", "")), tuple(str(p) for p in data.get("products", [])),
            str(data.get("bf16", "unknown")), str(data.get("flash_attn", "unknown")), str(data.get("retired_in", "")),
            str(data.get("min_rocm", "")), str(data.get("fp8", "unknown")),
        )

    def gfx_for_product(self, name: str) -> str:
        """The gfx target of a marketing name ("AMD Instinct MI300X VF" -> "gfx942"), or ''."""
        upper = name.upper()
        best = ""
        best_len = 0
        for gfx, data in self.gfx.items():
            for product in data.get("products", []):
                token = str(product).split(" (")[0].upper()
                if token and token in upper and len(token) > best_len:
                    best, best_len = gfx, len(token)
        return best

    # --- ROCm ----------------------------------------------------------------------------------
    def rocm_line(self, version: str) -> tuple[str, bool]:
        """The matrix line for a ROCm version: ("6.2", True) if listed, else (nearest older line, False)."""
        mm = major_minor(version)
        if mm is None:
            return "", False
        key = f"{mm[0]}.{mm[1]}"
        if key in self.rocm:
            return key, True
        older = [k for k in self.rocm if _mm(k) <= mm]
        return (max(older, key=_mm), False) if older else ("", False)

    def rocm_supports(self, version: str, gfx: str) -> bool | None:
        """Does this ROCm release support ``gfx`` for compute? None when the release is unknown."""
        line, exact = self.rocm_line(version)
        if not line:
            return None
        return gfx.lower() in [g.lower() for g in self.rocm[line].get("gfx", [])]

    def rocm_note(self, version: str) -> str:
        line, _ = self.rocm_line(version)
        return str(self.rocm.get(line, {}).get("note", "")) if line else ""

    # --- torch ---------------------------------------------------------------------------------
    def torch_wheel_rocm(self, torch_version: str) -> list[str]:
        """ROCm lines of the official wheels of that torch minor ([] if unknown)."""
        mm = major_minor(torch_version)
        return list(self.torch_rocm.get(f"{mm[0]}.{mm[1]}", [])) if mm else []

    def wheel_index(self, rocm_line: str) -> str:
        return str(self.target.get("wheel_index", "https://download.pytorch.org/whl/rocm{rocm}")).format(rocm=rocm_line)

    def torch_for_rocm(self, rocm_line: str) -> str:
        """The newest torch minor that ships wheels for ``rocm_line`` ('' if none)."""
        mm = _mm(rocm_line)
        found = [t for t, lines in self.torch_rocm.items() if any(_mm(x) == mm for x in lines)]
        return max(found, key=_mm) if found else ""

    def driver_rocm_line(self, driver_version: str) -> str:
        """The ROCm line an amdgpu module version is known to ship with ('6.8.5' -> '6.2'), or ''."""
        mm = major_minor(driver_version)
        if mm is None:
            return ""
        key = f"{mm[0]}.{mm[1]}"
        return next((line for line, data in self.rocm.items() if key in [str(d) for d in data.get("drivers", [])]), "")

    def lib(self, name: str) -> dict[str, Any]:
        return dict(self.libraries.get(name, {}))


def _mm(text: str) -> tuple[int, int]:
    return major_minor(text) or (0, 0)


@lru_cache(maxsize=4)
def load_matrix(path: str | None = None) -> CompatMatrix:
    """Read the matrix shipped in ``assets/`` (or ``path``). ``torch_rocm`` rows are ``{wheels: [...], source:}``
    (or a bare list in version-1 files)."""
    source = Path(path) if path else assets_dir() / "compat_matrix.yaml"
    data = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    torch_rocm = {}
    for k, v in (data.get("torch_rocm") or {}).items():
        wheels = v.get("wheels", []) if isinstance(v, dict) else v
        torch_rocm[str(k)] = [str(x) for x in wheels or []]
    return CompatMatrix(
        rocm={str(k): v or {} for k, v in (data.get("rocm") or {}).items()},
        gfx={str(k).lower(): v or {} for k, v in (data.get("gfx") or {}).items()},
        target=data.get("target") or {},
        torch_rocm=torch_rocm,
        libraries=data.get("libraries") or {},
        sources={str(k): str(v) for k, v in (data.get("sources") or {}).items()},
    )
