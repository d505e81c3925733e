"""User key remapping, posting-style: bindings have ids; ``keymap.yaml`` maps an id to new keys.

``~/.config/hipwizard/keymap.yaml`` (or ``$HIPWIZARD_KEYMAP``)::

    review.accept: "y,enter"
    app.help: "f1"
"""

from __future__ import annotations

import os
from pathlib import Path


def keymap_path() -> Path:
    override = os.environ.get("HIPWIZARD_KEYMAP")
    if override:
        return Path(override)
    from platformdirs import user_config_dir

    return Path(user_config_dir("hipwizard", appauthor=False)) / "keymap.yaml"


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """Binding id -> comma-separated keys. A missing or malformed file means no remapping."""
    path = path or keymap_path()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    import yaml  # only when there is a keymap: start-up stays lean without one

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, (str, int))}
