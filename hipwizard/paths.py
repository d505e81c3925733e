"""Where hipwizard keeps things: the user's cache (demo model) and a workspace's state folder."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The user's cache directory for hipwizard (``$HIPWIZARD_CACHE`` overrides it)."""
    override = os.environ.get("HIPWIZARD_CACHE")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("hipwizard", appauthor=False))


def assets_dir() -> Path:
    """Data shipped inside the package (compatibility matrix, demo CUDA project, presets)."""
    return Path(__file__).parent / "assets"
