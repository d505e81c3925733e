"""Front doors that load their rooms on first use (PEP 562).

A step package's ``__init__.py`` is its public surface: ``__all__`` names the services, the state readers
and the value types its faces show. Names from light modules are imported at the top of the door; names
from modules that pull a slow import chain (the translators, the planners, numpy-heavy readers) are listed
in a table and loaded on first attribute access, here, in one place, instead of in function bodies::

    __getattr__ = lazy_attributes(__name__, {"translate": "hipwizard.port.services", ...})

The first access imports the module, caches the value in the package's namespace (the next access is a
plain global lookup) and returns it. A name that is in neither place is an ``AttributeError``, as usual.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_attributes(package: str, table: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that takes each name in ``table`` from the module it maps to."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
