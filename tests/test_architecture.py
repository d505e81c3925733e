"""Guards of the layering: logic never imports textual; the first frame never imports torch."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import textwrap

import hipwizard

LOGIC_PACKAGES = ("doctor", "port", "parity", "train", "gpu")
UI_ONLY = ("textual",)
HEAVY = ("torch", "transformers", "deepspeed", "peft", "llamafactory", "amdsmi", "pynvml")


def _logic_modules() -> list[str]:
    names = ["hipwizard.runner", "hipwizard.workspace", "hipwizard.atomic", "hipwizard.cli"]
    for pkg in LOGIC_PACKAGES:
        names.append(f"hipwizard.{pkg}")
        path = [str(p) for p in getattr(__import__(f"hipwizard.{pkg}", fromlist=["_"]), "__path__")]
        for info in pkgutil.walk_packages(path, prefix=f"hipwizard.{pkg}."):
            names.append(info.name)
    return names


def _imported_after(module: str) -> set[str]:
    code = f"import importlib, json, sys; importlib.import_module({module!r}); print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_logic_modules_never_import_textual_or_heavy_libraries():
    offenders = {}
    for module in _logic_modules():
        loaded = _imported_after(module)
        bad = sorted(m for m in loaded if m.split(".")[0] in UI_ONLY + HEAVY)
        if bad:
            offenders[module] = bad[:5]
    assert offenders == {}


def test_first_frame_leaves_torch_out(tmp_path):
    code = textwrap.dedent(f"""
        import asyncio, json, sys
        from hipwizard.tui.app import HipwizardApp
        from hipwizard.workspace import Workspace

        async def main():
            app = HipwizardApp(Workspace({str(tmp_path)!r}))
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                # visit every step screen: none may import a heavy library on the UI thread
                for key in ("1", "2", "3", "4"):
                    await pilot.press(key)
                    await pilot.pause()
                    await pilot.press("h")
                    await pilot.pause()
            print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})))

        asyncio.run(main())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_package_version_is_exposed():
    proc = subprocess.run([sys.executable, "-m", "hipwizard", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"hipwizard {hipwizard.__version__}"
