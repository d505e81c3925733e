from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Keep every test away from the user's real cache and config."""
    base = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HIPWIZARD_CACHE", os.environ.get("HIPWIZARD_TEST_CACHE", str(base / "cache")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("HIPWIZARD_KEYMAP", str(base / "config" / "keymap.yaml"))
    monkeypatch.setenv("NO_COLOR", "")
    monkeypatch.delenv("NO_COLOR")


@pytest.fixture(scope="session")
def demo_assets():
    """The embedded demo's tiny model, built once per test session (real transformers + tokenizers)."""
    from hipwizard.demo_model import build

    cache = Path(os.environ.get("HIPWIZARD_TEST_CACHE", "/tmp/hipwizard-test-cache"))
    return build(cache / "demo")
