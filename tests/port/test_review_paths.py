"""The review state stores its source and output folders relative to itself: a copied migration folder
(sources, output, state) writes into its own copy, never into the original; old absolute files still load."""

from __future__ import annotations

import json
import shutil

from hipwizard.cli import main
from hipwizard.port.review.state import ReviewState, state_path_for

KERNEL = "#include <cuda_runtime.h>\nint main() {\n  float* d;\n  cudaMalloc(&d, 4);\n  cudaFree(d);\n  return 0;\n}\n"


def _migrate(root):
    (root / "src").mkdir(parents=True)
    (root / "src" / "k.cu").write_text(KERNEL)
    assert main(["hipify", str(root / "src"), "--out", str(root / "out"), "--workspace", str(root),
                 "--backend", "builtin", "--hip-version", "6.1", "--no-check"]) == 0


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_state_file_holds_relative_folders(tmp_path):
    _migrate(tmp_path / "mig")
    data = json.loads(state_path_for(tmp_path / "mig" / "out").read_text())
    assert (data["src"], data["out"]) == ("src", "out")


def test_copied_migration_writes_into_the_copy_and_leaves_the_original_alone(tmp_path, capsys):
    orig = tmp_path / "mig"
    _migrate(orig)
    state = ReviewState.load(state_path_for(orig / "out"))
    state.decide([h.hunk_id for h in state.hunks], "accepted")
    state.compact()
    before = _snapshot(orig)
    copy = tmp_path / "elsewhere" / "mig2"
    shutil.copytree(orig, copy)
    (copy / "src" / "k.cu").write_text(KERNEL)  # same content, fresh copy
    assert main(["review", str(copy / "out"), "--write", "--no-check"]) == 0
    assert _snapshot(orig) == before  # nothing written into the original folder
    again = ReviewState.load(state_path_for(copy / "out"))
    assert again.src == copy / "src" and again.out == copy / "out"
    written = (copy / "out" / "k.cu").read_text()
    assert "hipMalloc" in written and "cudaMalloc" not in written
    capsys.readouterr()
    assert main(["review", str(copy / "out"), "--summary", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["out"] == str(copy / "out") and summary["src"] == str(copy / "src")


def test_a_state_with_absolute_folders_still_loads_and_writes_there(tmp_path):
    mig = tmp_path / "mig"
    _migrate(mig)
    path = state_path_for(mig / "out")
    data = json.loads(path.read_text())
    data.update(version=2, src=str(mig / "src"), out=str(mig / "out"))
    moved = tmp_path / "other" / "out.review.json"  # an old file anywhere: its absolute folders are kept
    moved.parent.mkdir()
    moved.write_text(json.dumps(data))
    state = ReviewState.load(moved)
    assert state.src == mig / "src" and state.out == mig / "out"
    state.save()
    assert json.loads(moved.read_text())["src"] == "../mig/src"  # saved again: relative from now on
    assert ReviewState.load(moved).src == mig / "src"


def test_a_folder_that_is_not_a_string_is_refused_as_damaged(tmp_path):
    mig = tmp_path / "mig"
    _migrate(mig)
    path = state_path_for(mig / "out")
    data = json.loads(path.read_text())
    data["out"] = 7
    path.write_text(json.dumps(data))
    import pytest

    from hipwizard.errors import UserError
    with pytest.raises(UserError, match="damaged"):
        ReviewState.load(path)
