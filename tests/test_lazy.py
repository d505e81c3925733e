"""hipwizard/lazy.py: a door's lazy names load their module on first use, once, and nothing else."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_lazy_name_loads_its_module_on_first_use_only(tmp_path):
    pkg = tmp_path / "door_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        from hipwizard.lazy import lazy_attributes
        __all__ = ["heavy_fn"]
        __getattr__ = lazy_attributes(__name__, {"heavy_fn": "door_pkg.room"})
    """))
    (pkg / "room.py").write_text("LOADS = []\nLOADS.append(1)\ndef heavy_fn():\n    return 42\n")
    code = textwrap.dedent("""
        import sys, door_pkg
        assert "door_pkg.room" not in sys.modules
        assert door_pkg.heavy_fn() == 42 and door_pkg.heavy_fn() == 42
        assert sys.modules["door_pkg.room"].LOADS == [1]
        assert "heavy_fn" in vars(door_pkg)  # cached: the next access is a plain lookup
        try:
            door_pkg.nothing_here
        except AttributeError as exc:
            assert "nothing_here" in str(exc)
        else:
            raise SystemExit("no AttributeError")
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
