"""The CUDA library table (``assets/cuda_libraries.yaml``): each CUDA library's link names, headers and CMake
targets, and its HIP/ROCm counterpart with the package that installs it, or none.

``library_table()`` reads the shipped table once; the lookups (``by_link``, ``by_cmake_target``,
``by_findcuda_var``) answer the translators. A library ``without`` a drop-in counterpart still names what to
use instead, in ``note``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from hipwizard.paths import assets_dir

TABLE_FILE = "cuda_libraries.yaml"


@dataclass(frozen=True)
class HipCounterpart:
    links: tuple[str, ...]
    headers: tuple[str, ...]
    cmake_package: str | None
    cmake_targets: tuple[str, ...]
    rocm_package: str | None
    debian_package: str | None
    drop_in: bool = True

    @property
    def install(self) -> str:
        """Which package to install, in words: 'hipblas-dev (ROCm), libhipblas-dev (Debian)'."""
        parts = [f"{self.rocm_package} (ROCm)"] if self.rocm_package else []
        parts += [f"{self.debian_package} (Debian)"] if self.debian_package else []
        return ", ".join(parts) or "no package known"


@dataclass(frozen=True)
class CudaLibrary:
    name: str
    links: tuple[str, ...]
    headers: tuple[str, ...]
    cmake_targets: tuple[str, ...]
    findcuda_vars: tuple[str, ...]
    hip: HipCounterpart | None  # None: no HIP counterpart at all
    note: str
    source: str

    @property
    def replaceable(self) -> bool:
        """A build file can switch to the counterpart by name alone (one exists and it is a drop-in)."""
        return self.hip is not None and self.hip.drop_in

    def advice(self) -> str:
        """What to do instead, in one line (for a flag's fix)."""
        if self.hip is None:
            return f"{self.name} has no HIP counterpart: {self.note}"
        use = []
        if self.hip.links:
            use.append("link " + " ".join(f"-l{n}" for n in self.hip.links))
        if self.hip.cmake_targets:
            use.append(f"CMake find_package({self.hip.cmake_package}) and {', '.join(self.hip.cmake_targets)}")
        return f"{'; '.join(use)}; install {self.hip.install}" + (f". {self.note}" if self.note else "")


@dataclass(frozen=True)
class LibraryTable:
    libraries: tuple[CudaLibrary, ...]

    def by_link(self, name: str) -> CudaLibrary | None:
        return next((lib for lib in self.libraries if name in lib.links), None)

    def by_cmake_target(self, target: str) -> CudaLibrary | None:
        return next((lib for lib in self.libraries if target in lib.cmake_targets), None)

    def by_findcuda_var(self, var: str) -> CudaLibrary | None:
        return next((lib for lib in self.libraries if var in lib.findcuda_vars), None)

    def by_name(self, name: str) -> CudaLibrary | None:
        return next((lib for lib in self.libraries if lib.name.lower() == name.lower()), None)


def _strings(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: expected a list of strings")
    return tuple(value)


def _row(row: dict, n: int) -> CudaLibrary:
    if not isinstance(row, dict) or not isinstance(row.get("name"), str) or not isinstance(row.get("source"), str):
        raise ValueError(f"row {n}: needs a name and a source")
    name, cuda, hip = row["name"], row.get("cuda") or {}, row.get("hip")
    counterpart = None
    if isinstance(hip, dict):
        packages = hip.get("packages") or {}
        counterpart = HipCounterpart(
            _strings(hip.get("links"), f"{name} hip.links"), _strings(hip.get("headers"), f"{name} hip.headers"),
            hip.get("cmake_package"), _strings(hip.get("cmake_targets"), f"{name} hip.cmake_targets"),
            packages.get("rocm"), packages.get("debian"), bool(hip.get("drop_in", True)))
    elif hip != "none":
        raise ValueError(f"{name}: hip is a mapping or 'none'")
    return CudaLibrary(name, _strings(cuda.get("links"), f"{name} cuda.links"),
                       _strings(cuda.get("headers"), f"{name} cuda.headers"),
                       _strings(cuda.get("cmake_targets"), f"{name} cuda.cmake_targets"),
                       _strings(cuda.get("findcuda_vars"), f"{name} cuda.findcuda_vars"),
                       counterpart, str(row.get("note") or ""), row["source"])


def load_table(path: str | Path) -> LibraryTable:
    """The table in ``path``. Raises ``ValueError`` naming the first malformed row."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of libraries")
    return LibraryTable(tuple(_row(row, n) for n, row in enumerate(data, 1)))


@lru_cache(maxsize=1)
def library_table() -> LibraryTable:
    """The shipped table, read once."""
    return load_table(assets_dir() / TABLE_FILE)
