"""Dtype-aware tolerances: which error is "the same math" for fp64/fp32/fp16/bf16, and why.

Defaults live in ``assets/parity_tolerances.yaml``; a run may pick another profile or override single
fields (``--tolerance bf16 --tol rel_l2_max=0.05``). Each verdict records the tolerance it used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from hipwizard.errors import UserError
from hipwizard.jsonread import read_capped
from hipwizard.paths import assets_dir

DTYPES = ("fp64", "fp32", "fp16", "bf16")
# Precision order: the less precise side of a comparison decides the tolerance profile.
_PRECISION = {"fp64": 3, "fp32": 2, "fp16": 1, "bf16": 0}
_ALIASES = {
    "float64": "fp64", "double": "fp64", "f64": "fp64", "float32": "fp32", "float": "fp32", "f32": "fp32",
    "float16": "fp16", "half": "fp16", "f16": "fp16", "bfloat16": "bf16",
}
NUMERIC_FIELDS = ("cosine_min", "rel_l2_max", "rtol", "atol", "outside_max")


@dataclass(frozen=True)
class Tolerance:
    """The bar a module's output must meet. ``name`` says which profile (and overrides) it came from."""

    name: str
    cosine_min: float
    rel_l2_max: float
    rtol: float
    atol: float
    outside_max: float
    why: str

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        return (f"{self.name}: cosine ≥ {self.cosine_min:g}, rel L2 ≤ {self.rel_l2_max:g}, "
                f"≤ {self.outside_max:.2%} of elements outside |Δ| ≤ {self.atol:g} + {self.rtol:g}·|ref|")


def canonical_dtype(name: str) -> str:
    """'bfloat16' -> 'bf16' etc.; UserError for an unknown dtype."""
    key = name.strip().lower().removeprefix("torch.")
    key = _ALIASES.get(key, key)
    if key not in DTYPES:
        raise UserError(f"unknown dtype {name!r} (choose one of {', '.join(DTYPES)})")
    return key


def least_precise(*dtypes: str) -> str:
    """The dtype with the fewest significant digits among ``dtypes``."""
    return min((canonical_dtype(d) for d in dtypes), key=_PRECISION.__getitem__)


def more_precise(*dtypes: str) -> str:
    """The dtype with the most significant digits among ``dtypes``."""
    return max((canonical_dtype(d) for d in dtypes), key=_PRECISION.__getitem__)


def load_profiles(path: Path | None = None) -> dict[str, Tolerance]:
    """Every profile of the data file (default: the shipped one). Parsed once per version of the file (its
    size and modification time): a compare used to spend ~4 ms parsing the YAML, as much as comparing a
    compact capture's numbers; an edited file is read again."""
    path = Path(path or assets_dir() / "parity_tolerances.yaml")
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise UserError(f"tolerance file {path} does not exist") from None
    return dict(_parsed(str(path), stat.st_mtime_ns, stat.st_size))


TOLERANCE_CAP = 1 << 20  # the shipped file is 2 kB


@lru_cache(maxsize=8)
def _parsed(path_text: str, _mtime_ns: int, _size: int) -> dict[str, Tolerance]:
    path = Path(path_text)
    try:
        # Regular files only, capped (a FIFO waited for a writer forever, /dev/zero never ended).
        text = read_capped(path, TOLERANCE_CAP).decode("utf-8")
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except FileNotFoundError:
        raise UserError(f"tolerance file {path} does not exist") from None
    except UnicodeDecodeError:
        raise UserError(f"tolerance file {path} is not UTF-8 text") from None
    except IsADirectoryError:
        raise UserError(f"tolerance file {path} is a folder; give the YAML file") from None
    except OSError as exc:
        raise UserError(f"tolerance file {path} cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:  # over the cap
        raise UserError(f"tolerance file {path} is {exc}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"tolerance file {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UserError(f"tolerance file {path} must map dtype names to tolerances")
    profiles = {}
    for key, entry in data.items():
        dtype = canonical_dtype(str(key))
        if not isinstance(entry, dict):
            raise UserError(f"tolerance file {path}: {key} must be a mapping")
        try:
            values = {f: float(entry[f]) for f in NUMERIC_FIELDS}
        except KeyError as exc:
            raise UserError(f"tolerance file {path}: {key} lacks {exc.args[0]}") from None
        except (TypeError, ValueError):
            raise UserError(f"tolerance file {path}: {key} has a non-numeric value") from None
        profiles[dtype] = Tolerance(name=dtype, why=str(entry.get("why", "")).strip(), **values)
    return profiles


def parse_overrides(items: list[str] | None) -> dict[str, float]:
    """``["rel_l2_max=0.05", "cosine_min=0.99"]`` -> dict; UserError on unknown keys or bad numbers."""
    out: dict[str, float] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in NUMERIC_FIELDS:
            raise UserError(f"bad --tol {item!r}: use KEY=NUMBER with KEY one of {', '.join(NUMERIC_FIELDS)}")
        try:
            out[key] = float(value)
        except ValueError:
            raise UserError(f"bad --tol {item!r}: {value!r} is not a number") from None
    return out


def resolve(dtype: str, overrides: dict[str, float] | None = None, path: Path | None = None) -> Tolerance:
    """The tolerance for ``dtype`` with per-run ``overrides`` applied (named e.g. 'bf16+rel_l2_max=0.05')."""
    dtype = canonical_dtype(dtype)
    profiles = load_profiles(path)
    if dtype not in profiles:
        raise UserError(f"no tolerance profile for {dtype} in the tolerance file")
    tol = profiles[dtype]
    if overrides:
        suffix = ",".join(f"{k}={v:g}" for k, v in sorted(overrides.items()))
        changes: dict[str, Any] = {"name": f"{tol.name}+{suffix}", **overrides}
        tol = replace(tol, **changes)
    return tol
