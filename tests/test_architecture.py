"""Guards of the layering: logic never imports textual; the first frame never imports torch."""

from __future__ import annotations

import json
import pkgutil
import shutil
import subprocess
import sys
import textwrap

import pytest

import hipwizard

LOGIC_PACKAGES = ("doctor", "port", "parity", "train", "gpu")
UI_ONLY = ("textual",)
HEAVY = ("torch", "transformers", "deepspeed", "peft", "llamafactory", "amdsmi", "pynvml", "matplotlib")


def _logic_modules() -> list[str]:
    names = ["hipwizard.runner", "hipwizard.workspace", "hipwizard.atomic", "hipwizard.cli", "hipwizard.steps",
             "hipwizard.progress"]
    for pkg in LOGIC_PACKAGES:
        names.append(f"hipwizard.{pkg}")
        path = [str(p) for p in __import__(f"hipwizard.{pkg}", fromlist=["_"]).__path__]
        for info in pkgutil.walk_packages(path, prefix=f"hipwizard.{pkg}."):
            names.append(info.name)
    return names


def _imported_after(module: str) -> set[str]:
    code = f"import importlib, json, sys; importlib.import_module({module!r}); print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


@pytest.mark.slow
def test_logic_modules_never_import_textual_or_heavy_libraries():
    offenders = {}
    for module in _logic_modules():
        loaded = _imported_after(module)
        bad = sorted(m for m in loaded if m.split(".")[0] in UI_ONLY + HEAVY)
        if bad:
            offenders[module] = bad[:5]
    assert offenders == {}


@pytest.mark.slow
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


def _lint_imports(root, package_parent=None) -> subprocess.CompletedProcess:
    from pathlib import Path

    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is part of the dev extra (pip install -e '.[dev]')"
    env = None
    if package_parent is not None:  # a planted copy of the package shadows the installed one
        import os

        env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([lint, "--no-cache"], cwd=root, capture_output=True, text=True, timeout=180, env=env)


def _contract_count(pyproject) -> int:
    import tomllib

    return len(tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"])


def test_import_contracts_hold():
    """pyproject.toml's import-linter contracts: step packages import neither face, the TUI not the CLI, the
    shared floor no step, the port's review no translator. They read the source, so an import inside a
    function counts too."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = _lint_imports(root)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
    n = _contract_count(root / "pyproject.toml")
    assert n >= 4 and "BROKEN" not in proc.stdout and f"{n} kept" in proc.stdout


def test_import_contracts_fail_on_a_violation(tmp_path):
    """Not vacuous: the review importing the translation engine inside a function, and the workspace importing
    a step, break their contracts on a planted copy of the package."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    package = tmp_path / "hipwizard"
    shutil.copytree(Path(hipwizard.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    (package / "port" / "review" / "sneak.py").write_text("def f():\n    from hipwizard.port.translation import engine\n")
    with (package / "workspace.py").open("a", encoding="utf-8") as f:
        f.write("\nimport hipwizard.train.state\n")
    shutil.copy(root / "pyproject.toml", tmp_path / "pyproject.toml")
    proc = _lint_imports(tmp_path, package_parent=tmp_path)
    assert proc.returncode != 0
    assert "hipwizard.port.review.sneak -> hipwizard.port.translation.engine" in proc.stdout
    assert "hipwizard.workspace -> hipwizard.train.state" in proc.stdout
    assert f"{_contract_count(root / 'pyproject.toml') - 2} kept, 2 broken" in proc.stdout


def test_no_module_over_400_lines():
    from pathlib import Path

    package = Path(hipwizard.__file__).parent
    long = {str(p.relative_to(package)): n for p in package.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


# --- rule 3: .hipwizard/<step>.json is read and written only by that step's state.py (and workspace.py) ----
STATE_CALLS = ("read_state", "update_state", "write_state", "state_file")


def _state_file_touches(package) -> list[str]:
    """``path:line name`` for every call of a workspace state-file method outside ``<pkg>/state.py`` and
    ``workspace.py`` under ``package`` (a folder laid out as ``hipwizard/``); a room's ``state.py`` deeper
    down (``port/review/state.py``) is no owner."""
    import ast
    from pathlib import Path

    package = Path(package)
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel == "workspace.py" or (path.name == "state.py" and path.parent.parent == package):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STATE_CALLS:
                found.append(f"{rel}:{node.lineno} {node.func.attr}")
    return found


def test_state_files_are_read_and_written_only_by_their_state_module():
    from pathlib import Path

    assert _state_file_touches(Path(hipwizard.__file__).parent) == []


@pytest.mark.slow
def test_the_state_file_rule_fails_on_a_violation(tmp_path):
    """The check above is not vacuous: a report module reading parity's file, a face writing train's, fail;
    the owners (``parity/state.py``, ``workspace.py``) pass."""
    import shutil
    from pathlib import Path

    package = tmp_path / "hipwizard"
    shutil.copytree(Path(hipwizard.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    (package / "report" / "collect.py").write_text(
        (package / "report" / "collect.py").read_text() + "\n\ndef _peek(ws):\n    return ws.read_state('parity')\n")
    (package / "tui" / "sneak.py").write_text("def f(ws):\n    ws.update_state('train', last_run='x')\n")
    found = _state_file_touches(package)
    assert len(found) == 2 and found[0].startswith("report/collect.py:") and found[0].endswith(" read_state")
    assert found[1] == "tui/sneak.py:2 update_state"


# --- rule 1: faces (cli/, tui/, report/) enter a step only by its door (hipwizard.<step>) and its state.py ------
FACES = ("cli", "tui", "report")


def _behind_the_door(step: str, package=None) -> list[str]:
    """``path:line module`` for every import in a face module under ``package`` (a folder laid out as
    ``hipwizard/``; default: the installed one) that reaches past step ``step``'s door: any
    ``hipwizard.<step>.<room>`` but ``state``, ``from hipwizard.<step> import <submodule>``, or a name the
    door does not list in its ``__all__``. Imports inside functions count. One line per step to reuse."""
    import ast
    import importlib
    from pathlib import Path

    package = Path(package or Path(hipwizard.__file__).parent)
    door = f"hipwizard.{step}"
    allowed = {door, f"{door}.state"}
    public = set(importlib.import_module(door).__all__)

    def is_module(name: str) -> bool:
        where = package / step / name
        return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()

    found = []
    for face in FACES:
        for path in sorted((package / face).rglob("*.py")):
            rel = path.relative_to(package).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                reached: list[str] = []
                if isinstance(node, ast.Import):
                    reached = [a.name for a in node.names if a.name == door or a.name.startswith(door + ".")]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if node.module == door:
                        reached = [f"{door}.{a.name}" for a in node.names
                                   if is_module(a.name) or a.name not in public]
                    elif node.module.startswith(door + "."):
                        reached = [node.module]
                    elif node.module == "hipwizard":
                        reached = [f"hipwizard.{a.name}" for a in node.names if a.name == step]
                found += [f"{rel}:{node.lineno} {m}" for m in reached if m not in allowed]
    return found


def test_faces_enter_the_doctor_by_its_door():
    assert _behind_the_door("doctor") == []


def test_faces_enter_the_gpu_by_its_door():
    assert _behind_the_door("gpu") == []


def test_faces_enter_train_by_its_door():
    assert _behind_the_door("train") == []


def test_the_door_rule_fails_on_a_violation(tmp_path):
    """The check above is not vacuous: a face importing a room (at the top or inside a function), a
    submodule through the door, or a name the door does not publish fails; the door and state pass."""
    import shutil
    from pathlib import Path

    package = tmp_path / "hipwizard"
    shutil.copytree(Path(hipwizard.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    (package / "tui" / "sneak.py").write_text(
        "from hipwizard.doctor import DoctorReport, diagnose\n"
        "from hipwizard.doctor.state import target_facts\n"
        "import hipwizard.doctor\n"
        "from hipwizard import doctor\n"
        "from hipwizard.doctor.probe.replay import slug\n"
        "from hipwizard.doctor import services\n"
        "from hipwizard.doctor import lazy_attributes\n"
        "def f():\n"
        "    import hipwizard.doctor.judge.matrix\n")
    assert _behind_the_door("doctor", package) == [
        "tui/sneak.py:5 hipwizard.doctor.probe.replay", "tui/sneak.py:6 hipwizard.doctor.services",
        "tui/sneak.py:7 hipwizard.doctor.lazy_attributes", "tui/sneak.py:9 hipwizard.doctor.judge.matrix"]


def test_faces_enter_the_port_by_its_door():
    assert _behind_the_door("port") == []


def test_faces_enter_parity_by_its_door():
    assert _behind_the_door("parity") == []


STEPS = ("doctor", "port", "parity", "train", "gpu")


@pytest.mark.parametrize("step", STEPS)
def test_no_published_name_is_also_a_submodule(step):
    """Importing a submodule rebinds the package attribute of that name to the module: a service published
    under a module's name (parity's postmortem was) becomes 'module object is not callable' for the faces
    as soon as anything imports the module."""
    from pathlib import Path

    package = Path(hipwizard.__file__).parent / step
    public = __import__(f"hipwizard.{step}", fromlist=["_"]).__all__
    shadowed = [n for n in public if (package / f"{n}.py").is_file() or (package / n / "__init__.py").is_file()]
    assert public and shadowed == []


# --- no import circles: no two project modules import each other, directly or round a longer loop -------------
# Every package of hipwizard is checked (steps, faces, the shared floor); ``steps`` narrows it for a planted case.


def _import_graph(package) -> dict[str, set[str]]:
    """{module: project modules it imports} for every module under ``package`` (a folder laid out as
    ``hipwizard/``), read with the AST: imports inside functions and under TYPE_CHECKING count."""
    import ast
    from pathlib import Path

    package = Path(package)
    modules = {}
    for path in package.rglob("*.py"):
        parts = ("hipwizard", *path.relative_to(package).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        edges = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = name.split(".")[: len(name.split(".")) - node.level + (1 if is_pkg else 0)]
                    base = ".".join(up + ([node.module] if node.module else []))
                for a in node.names:
                    edges.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
        edges &= set(modules)
        edges.discard(name)
    return graph


def _import_cycles(package, steps: tuple[str, ...] | None = None) -> list[list[str]]:
    """Each import circle (a strongly connected set of modules, sorted) that holds a module of ``steps``
    (top-level packages or modules of hipwizard; all of them when None)."""
    import sys as _sys

    graph = _import_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    limit = _sys.getrecursionlimit()
    _sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        _sys.setrecursionlimit(limit)
    return sorted(g for g in found if steps is None or any(m.split(".")[1] in steps for m in g))


def test_no_import_circles():
    from pathlib import Path

    assert _import_cycles(Path(hipwizard.__file__).parent) == []


def test_the_circle_rule_fails_on_a_violation(tmp_path):
    """The check above is not vacuous: two port modules importing each other (one inside a function, as
    the risk catalogue's parts did) are a circle; so is a loop round three modules."""
    import shutil
    from pathlib import Path

    package = tmp_path / "hipwizard"
    shutil.copytree(Path(hipwizard.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    (package / "port" / "a.py").write_text("from hipwizard.port.b import X\nY = 1\n")
    (package / "port" / "b.py").write_text("X = 1\ndef f():\n    from hipwizard.port.a import Y\n    return Y\n")
    (package / "doctor" / "c.py").write_text("from hipwizard.doctor import d\n")
    (package / "doctor" / "d.py").write_text("from . import e\n")
    (package / "doctor" / "e.py").write_text("import hipwizard.doctor.c\n")
    (package / "tui" / "f.py").write_text("import hipwizard.tui.g\n")
    (package / "tui" / "g.py").write_text("from hipwizard.tui import f\n")
    assert _import_cycles(package, steps=("port", "doctor")) == [["hipwizard.doctor.c", "hipwizard.doctor.d", "hipwizard.doctor.e"],
                                       ["hipwizard.port.a", "hipwizard.port.b"]]
    assert ["hipwizard.tui.f", "hipwizard.tui.g"] in _import_cycles(package)


# --- one subprocess protocol: library code never runs the hipwizard CLI and scrapes what it prints ----------------
def _cli_argv_outside_the_cli(package) -> list[str]:
    """``path:line`` of each list/tuple literal outside ``cli/`` that runs hipwizard's command line
    (``..., "-m", "hipwizard", ...`` or a first element ``"hipwizard"``): work that crosses a process goes
    through ``hipwizard.jobs`` (JSON lines) or a step module's own ``-m`` entry, never the CLI."""
    import ast
    from pathlib import Path

    package = Path(package)
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("cli/") or rel == "__main__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, (ast.List, ast.Tuple)):
                continue
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            runs_cli = (words[:1] == ["hipwizard"]
                        or any(a == "-m" and b == "hipwizard" for a, b in zip(words, words[1:], strict=False)))
            if runs_cli:
                found.append(f"{rel}:{node.lineno}")
    return found


def test_library_code_never_runs_the_cli():
    from pathlib import Path

    assert _cli_argv_outside_the_cli(Path(hipwizard.__file__).parent) == []


def test_the_cli_argv_rule_fails_on_a_violation(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "fill.py").write_text(
        "import sys\nARGV = [sys.executable, '-m', 'hipwizard', 'doctor']\nOTHER = ('hipwizard', 'port')\n"
        "FINE = [sys.executable, '-m', 'hipwizard.jobs']\n")
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "x.py").write_text("A = ['hipwizard', 'doctor']\n")
    assert _cli_argv_outside_the_cli(tmp_path) == ["report/fill.py:2", "report/fill.py:3"]
