"""Pilot tests of the Port screen: every key, the mouse paths, edit, write, setup, bad state; snapshots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Input

from hipwizard.cli import main
from hipwizard.port import services
from hipwizard.port.review.state import ReviewState
from hipwizard.port.state import record_link
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.port.dialogs import ConfirmWrite
from hipwizard.tui.port.screen import PortScreen
from hipwizard.workspace import Workspace
from tests.port.review_factory import KERNEL, new_review, risky_project, translation
from tests.port.target import (
    HIP_61,
    NEW_API_KERNEL,
    NEW_APIS,
    RecordingHipcc,
    save_rocm61_gfx90a,
)
from tests.tui.waiting import notifications, until

SIZE = (110, 32)


def _workspace(tmp_path, files=None) -> tuple[Workspace, ReviewState]:
    review = new_review(tmp_path, files)
    ws = Workspace(tmp_path)
    record_link(ws, str(review.src), str(review.out))
    return ws, review


async def _open(app, pilot) -> PortScreen:
    await pilot.press("2")
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert isinstance(app.screen, PortScreen) and app.screen.review is not None
    return app.screen


def _body(screen) -> str:
    """The hunk view as plain text."""
    import io

    from rich.console import Console

    console = Console(width=120, file=io.StringIO(), color_system=None)
    console.print(screen.query_one("#port-hunk-body").content)
    return console.file.getvalue()


def _disk(review) -> ReviewState:
    return ReviewState.load(review.path)


async def test_opens_at_first_pending_and_y_n_advance_and_save(tmp_path):
    ws, review = _workspace(tmp_path)
    review.decide([h.hunk_id for h in review.hunks[:2]], "accepted")
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        ids = [h.hunk_id for h in screen.review.hunks]
        assert screen.nav.current.hunk_id == ids[2]
        await pilot.press("y")
        assert _disk(review).decision(ids[2]).state == "accepted"
        assert screen.nav.current.hunk_id == ids[3]
        await pilot.press("n")
        assert _disk(review).decision(ids[3]).state == "rejected"
        body = _body(screen)
        assert "○ pending" in body
        await pilot.press("k")
        await pilot.pause()
        assert "✖ rejected" in _body(screen)
        await pilot.press("u")
        await pilot.pause()
        assert _disk(review).decision(ids[3]).state == "pending"
        assert screen.nav.current.hunk_id == ids[3]


async def test_decisions_go_to_the_journal_and_are_folded_in_on_open_and_exit(tmp_path):
    ws, review = _workspace(tmp_path)
    review.decide([review.hunks[0].hunk_id], "accepted")  # journaled before the screen opens
    assert review.journal.exists()
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        assert not review.journal.exists()  # compacted on open
        on_open = review.path.read_bytes()
        await pilot.press("y")
        assert review.path.read_bytes() == on_open and review.journal.exists()
        second = screen.review.hunks[1].hunk_id
        assert _disk(review).decision(second).state == "accepted"
    assert not review.journal.exists()  # compacted on exit: the state file alone is complete
    assert '"state": "accepted"' in review.path.read_text().split(second, 1)[1].split("\n", 1)[0]


async def test_j_k_J_K_move_through_hunks_and_pending(tmp_path):
    ws, review = _workspace(tmp_path)
    ids = [h.hunk_id for h in review.hunks]
    review.decide([ids[1], ids[2]], "rejected")
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        assert screen.nav.current.hunk_id == ids[0]
        await pilot.press("J")
        assert screen.nav.current.hunk_id == ids[3]
        await pilot.press("K")
        assert screen.nav.current.hunk_id == ids[0]
        await pilot.press("j", "j")
        assert screen.nav.current.hunk_id == ids[2]
        await pilot.press("k")
        assert screen.nav.current.hunk_id == ids[1]
        await pilot.press("k", "k")  # the second k has nowhere to go
        assert screen.nav.current.hunk_id == ids[0]


async def test_a_d_accept_and_reject_the_rest_of_a_file_and_A_accepts_unflagged(tmp_path):
    ws, review = _workspace(tmp_path)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        first_file = screen.nav.current.file
        await pilot.press("n", "k", "a")  # reject the first hunk, then accept the rest of the file
        disk = _disk(review)
        states = [disk.decision(i).state for i in screen.nav.file_ids(first_file)]
        assert states[0] == "rejected" and set(states[1:]) == {"accepted"}
        await pilot.press("u")
        await pilot.press("d")
        disk = _disk(review)
        assert {disk.decision(i).state for i in screen.nav.file_ids(first_file)} == {"rejected"}
        await pilot.press("A")
        disk = _disk(review)
        for h in disk.hunks:
            expected = "rejected" if h.file == first_file else ("pending" if h.flags else "accepted")
            assert disk.decision(h.hunk_id).state == expected
        prompt = str(screen.query_one("#port-filelist").get_option_at_index(0).prompt)
        assert prompt.startswith("✔") and "✖" in prompt


@pytest.mark.slow
async def test_s_splits_and_u_unsplits(tmp_path):
    ws, review = _workspace(tmp_path, {"k.cu": KERNEL})
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        while len(screen.nav.current.old_lines) < 2:
            await pilot.press("j")
        parent = screen.nav.current.hunk_id
        await pilot.press("s")
        assert screen.nav.current.hunk_id == f"{parent}.1"
        assert parent in _disk(review).splits
        await pilot.press("u")
        assert screen.nav.current.hunk_id == parent and _disk(review).splits == {}
        await pilot.press("k")
        single = screen.nav.current
        if len(single.old_lines) == len(single.new_lines) == 1:
            await pilot.press("s")
            assert screen.nav.current.hunk_id == single.hunk_id


async def test_e_edits_in_editor_and_shows_the_edit(tmp_path, monkeypatch):
    ws, review = _workspace(tmp_path)
    script = tmp_path / "editor.sh"
    script.write_text('#!/bin/sh\nsed -i "s/hip/HIP_BY_HAND_/" "$1"\n')
    script.chmod(0o755)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script))
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        hunk = screen.nav.current
        await pilot.press("e")
        await pilot.pause()
        d = _disk(review).decision(hunk.hunk_id)
        assert d.state == "edited" and any("HIP_BY_HAND_" in x for x in d.lines)
        assert "✎ edited" in _body(screen)


@pytest.mark.parametrize("editor, words", [(None, "set $EDITOR"), ("false", "exited with code 1"),
                                           ("/nonexistent/editor", "cannot start editor")])
async def test_e_with_missing_or_failing_editor_says_so_and_changes_nothing(tmp_path, monkeypatch, editor, words):
    ws, review = _workspace(tmp_path)
    monkeypatch.delenv("VISUAL", raising=False)
    if editor is None:  # and no fallback editor on the PATH either
        monkeypatch.delenv("EDITOR", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    else:
        monkeypatch.setenv("EDITOR", editor)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        await pilot.press("e")
        await pilot.pause()
        assert any(words in n for n in notifications(app))
        assert _disk(review).counts().edited == 0 and screen.review.revision == 0


@pytest.mark.slow
async def test_slash_searches_and_escape_closes(tmp_path):
    ws, review = _workspace(tmp_path)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        await pilot.press("slash")
        search = screen.query_one("#port-search")
        assert search.display and search.has_focus
        await pilot.press(*"hipFree", "enter")
        await pilot.pause()
        assert any("hipFree" in x for x in screen.nav.current.new_lines)
        await pilot.press("escape")
        assert not search.display
        await pilot.press("y")  # keys go to the review again
        assert _disk(review).counts().accepted == 1


async def test_f_cycles_filters_including_rule_ids(tmp_path):
    ws, review = _workspace(tmp_path)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        total = len(screen.nav.view)
        await pilot.press("f")
        await pilot.pause()
        assert screen.nav.filter == "flagged" and 0 < len(screen.nav.view) < total
        assert screen.nav.view and all(screen.review.hunks[i].flags for i in screen.nav.view)
        await pilot.press("f", "f")
        await pilot.pause()
        assert screen.nav.filter == "rule:WARP32_LITERAL"
        assert "Rule WARP32_LITERAL" in str(screen.query_one("#port-status").render())
        await pilot.press("f")
        await pilot.pause()
        assert screen.nav.filter == "all" and len(screen.nav.view) == total


@pytest.mark.slow
async def test_mouse_file_list_buttons_and_filter(tmp_path):
    ws, review = _workspace(tmp_path)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        files = screen.nav.files
        await pilot.click("#port-filelist", offset=(4, 2))  # second file's first row
        await pilot.pause()
        assert screen.nav.current.file == files[1]
        current = screen.nav.current.hunk_id
        await pilot.click("#btn-accept")
        await pilot.pause()
        assert _disk(review).decision(current).state == "accepted"
        await pilot.click("#btn-undo")
        await pilot.pause()
        assert _disk(review).decision(current).state == "pending"
        await pilot.click("#btn-reject")
        await pilot.pause()
        assert _disk(review).decision(current).state == "rejected"
        await pilot.click("#port-filter")
        await pilot.pause()
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert screen.nav.filter == "pending"


@pytest.mark.slow
async def test_write_asks_when_pending_and_writes_on_yes(tmp_path):
    ws, review = _workspace(tmp_path, {"main.cu": KERNEL})
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        await pilot.press("w")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmWrite)
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is screen and not review.out.exists()
        await pilot.click("#btn-write")
        await pilot.pause()
        await pilot.click("#confirm-yes")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert (review.out / "main.cu").read_text() == (review.src / "main.cu").read_text()  # all pending
        assert screen.query_one("#port-results").display
        assert _disk(review).last_write.files == 1
        assert not any("hand edit" in n for n in notifications(app))  # none needed: none said


@pytest.mark.slow
async def test_no_migration_offers_a_source_picker_and_translates(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "k.cu").write_text(KERNEL)
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#port-switch").current == "port-setup"
        assert screen.query_one("#setup-src").has_focus
        await pilot.press(*str(src), "enter", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.review is not None and screen.review.counts().total > 0
        assert screen.query_one("#port-switch").current == "port-review"
        assert (tmp_path / "proj-hip.review.json").exists()
        assert Workspace(tmp_path).read_state("port")["out"] == "proj-hip"  # relative to the workspace


async def test_corrupted_state_is_reported_and_kept(tmp_path):
    ws, review = _workspace(tmp_path)
    review.path.write_text('{"kind": "hipwizard-review", "version": 7}')
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        status = str(app.screen.query_one("#setup-status").render())
        assert "newer" in status and "kept" in status
        await pilot.press("enter")  # even submitting the form does not overwrite it
        await app.workers.wait_for_complete()
    assert review.path.read_text() == '{"kind": "hipwizard-review", "version": 7}'


async def test_bindings_are_remappable_by_id(tmp_path):
    ws, review = _workspace(tmp_path)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        app.set_keymap({"review.accept": "x"})
        await pilot.pause()
        first = screen.nav.current.hunk_id
        await pilot.press("x")
        assert _disk(review).decision(first).state == "accepted"


# --- risks on unchanged lines ---------------------------------------------------------------------

def _risky_workspace(tmp_path) -> tuple[Workspace, ReviewState]:
    review = risky_project(tmp_path)
    ws = Workspace(tmp_path)
    record_link(ws, str(review.src), str(review.out))
    return ws, review


@pytest.mark.slow
async def test_the_write_says_how_many_lines_need_a_hand_edit_as_the_summary_counts_them(tmp_path):
    ws, review = _risky_workspace(tmp_path)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await _open(app, pilot)
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmWrite))
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await until(pilot, lambda: any("Wrote" in n for n in notifications(app)))
    hand = _disk(review).hand_edit_lines()  # the count `review --summary` prints
    assert hand["total"] >= 2 and hand["risks"] >= 2
    assert any(f"⚑ {hand['total']} line(s) need a hand edit ({hand['risks']} with risks on unchanged lines, "
               f"{hand['api']} with an API HIP lacks)" in n for n in notifications(app)), notifications(app)


async def test_a_file_with_only_untouched_risks_is_listed_shown_and_filtered(tmp_path):
    ws, review = _risky_workspace(tmp_path)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        files = screen.query_one("#port-filelist")
        assert str(files.get_option_at_index(0).prompt) == "⚑ include/common.cuh\n  2 manual edits"
        assert screen.nav.current.file == "main.cu"  # opens at the first pending hunk
        await pilot.click("#port-filelist", offset=(4, 0))
        await pilot.pause()
        assert screen.nav.current is None and screen.nav.current_file == "include/common.cuh"
        body = _body(screen)
        for words in ("nothing to accept or reject", "Risks on unchanged lines of this file (2)",
                      "#define WARP_SIZE 32", "WARP32_LITERAL", "FULL_MASK_32", "fix: ", "source: "):
            assert words in body
        await pilot.press("y", "n", "a")  # nothing to decide here
        await pilot.pause()
        assert _disk(review).counts().pending == len(review.hunks)
        await pilot.press("f")  # flagged only: main.cu has no flag, the header stays for its risks
        await pilot.pause()
        assert screen.nav.filter == "flagged" and screen.nav.files == ["include/common.cuh"]
        assert screen.nav.current_file == "include/common.cuh" and "WARP_SIZE 32" in _body(screen)
        assert files.option_count == 1


def test_snapshot_untouched_risks_only_file(tmp_path, snap_compare):
    ws, _review = _risky_workspace(tmp_path)

    async def go(pilot):
        await _settle(pilot)
        await pilot.press("k")  # from main.cu's hunk back to the header listed for its risks
        await pilot.pause()
    assert snap_compare(HipwizardApp(ws), terminal_size=SIZE, run_before=go)


# --- snapshots ---------------------------------------------------------------------------------------

def _snap_app(tmp_path, decide: int = 0):
    ws, review = _workspace(tmp_path)
    if decide:
        review.decide([h.hunk_id for h in review.hunks[:decide]], "accepted")
    return HipwizardApp(ws)


async def _settle(pilot):
    pilot.app.sub_title = "snapshot"
    await pilot.press("2")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_snapshot_first_hunk(tmp_path, snap_compare):
    assert snap_compare(_snap_app(tmp_path), terminal_size=(80, 24), run_before=_settle)


def test_snapshot_flagged_hunk(tmp_path, snap_compare):
    async def go(pilot):
        await _settle(pilot)
        await pilot.press("J")  # hunk 2 of the first file carries WARP32_LITERAL
        await pilot.pause()
    assert snap_compare(_snap_app(tmp_path), terminal_size=SIZE, run_before=go)


@pytest.mark.slow
def test_snapshot_flagged_hunk_80x24(tmp_path, snap_compare):
    """At 80x24 the flag's reason is on screen, above the diff (its details scroll into view with PgDn)."""
    async def go(pilot):
        await _settle(pilot)
        await pilot.press("J")
        await pilot.pause()
    assert snap_compare(_snap_app(tmp_path), terminal_size=(80, 24), run_before=go)


TALL = ("#include <cuda_runtime.h>\n__global__ void k(float* x) {\n  float v = x[threadIdx.x];\n"
        + "".join(f"  cudaDeviceSynchronize(); // {n}\n" for n in range(12))
        + "  v += __shfl_down_sync(0xffffffff, v, 16);\n  x[0] = v;\n}\n")


async def test_flag_reason_is_visible_at_80x24_and_pgdn_scrolls_to_the_details(tmp_path):
    ws, _review = _workspace(tmp_path, {"tall.cu": TALL})
    app = HipwizardApp(ws)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open(app, pilot)
        while not screen.nav.current.flags:
            assert screen.nav.step(1)
        screen.show_hunk()
        await pilot.pause()
        body = screen.query_one("#port-hunk-body")
        flag = screen.nav.current.flags[0]
        shown = [str(body.render_line(y).text) for y in range(body.content_region.height)]
        assert any(flag.rule_id in row and flag.reason[:20] in row for row in shown), shown
        if body.max_scroll_y > 0:  # the details do not fit: PgDn reaches them
            await pilot.press("pagedown")
            await pilot.pause()
            assert body.scroll_y > 0


def test_snapshot_filter_on(tmp_path, snap_compare):
    async def go(pilot):
        await _settle(pilot)
        await pilot.press("f")
        await pilot.pause()
    assert snap_compare(_snap_app(tmp_path, decide=2), terminal_size=SIZE, run_before=go)


def _compile_error_app(tmp_path):
    """One file, every hunk accepted except the one that frees memory: real hipcc then fails on
    `cudaFree`, an identifier HIP does not have."""
    ws, review = _workspace(tmp_path, {"k.cu": KERNEL})
    for h in review.hunks:
        keep_cuda = any("cudaFree" in x for x in h.old_lines)
        review.decide([h.hunk_id], "rejected" if keep_cuda else "accepted")
    return HipwizardApp(ws), review


async def _write_and_wait(pilot):
    await pilot.press("w")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


# The real compiler: ./run.sh test installs Debian's hipcc; elsewhere these say why they did not run.
needs_hipcc = pytest.mark.skipif(shutil.which("hipcc") is None and not Path("/opt/rocm/bin/hipcc").exists(),
                                 reason="hipcc not installed (apt-get install hipcc)")


@pytest.mark.slow
@needs_hipcc
async def test_write_compile_error_jumps_to_its_hunk(tmp_path):
    app, review = _compile_error_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        await _write_and_wait(pilot)
        current = screen.nav.current
        assert any("cudaFree" in x for x in current.old_lines)
        assert "compile error" in _body(screen) and "cudaFree" in _body(screen)
        results = screen.query_one("#port-results")
        rows = [str(results.get_option_at_index(i).prompt) for i in range(results.option_count)]
        assert rows[0].startswith("✖ k.cu") and any("open its hunk" in r for r in rows)
        await pilot.press("j")  # move away, then select the error row: back to the hunk
        results.focus()
        results.highlighted = next(i for i, r in enumerate(rows) if "open its hunk" in r)
        await pilot.press("enter")
        await pilot.pause()
        assert screen.nav.current.hunk_id == current.hunk_id
    assert _disk(review).last_write.compile_errors >= 1


@pytest.mark.slow
@needs_hipcc
def test_snapshot_after_write_with_compile_error(tmp_path, snap_compare):
    app, _review = _compile_error_app(tmp_path)

    async def go(pilot):
        await _settle(pilot)
        await _write_and_wait(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()
    assert snap_compare(app, terminal_size=SIZE, run_before=go)


async def test_demo_workspace_opens_on_the_demo_cuda_project(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPWIZARD_CACHE", str(tmp_path / "cache"))
    from hipwizard.demo_workspace import prepare_demo_workspace

    ws = prepare_demo_workspace()
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()  # load finds no review: translation starts
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert screen.review is not None and screen.review.src == ws.root / "cuda_project"
        assert "matmul.cu" in screen.nav.files and screen.review.rule_ids()
        # hipify leaves `#define WARP_SIZE 32` alone; it is still shown as a risk under the file's hunks
        assert screen.nav.go_to_file("include/common.cuh")
        screen.show_hunk()
        body = _body(screen)
        assert "Risks on unchanged lines of this file" in body
        warp = body[body.index("Risks on unchanged lines"):]
        warp = warp[warp.index("#define WARP_SIZE 32"):]
        assert warp.split("\n")[1].strip().startswith("✖ high WARP32_LITERAL")
        row = screen.query_one("#port-filelist").get_option_at_index(screen.nav.file_row["include/common.cuh"])
        assert "manual" in str(row.prompt)


async def test_a_tall_hunk_scrolls_and_the_next_short_one_gets_the_full_width_back(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    orig = "".join(f"cudaFree(p{i});\n" for i in range(60)) + "int x;\n" * 5 + "cudaMalloc(&q, 4);\n"
    (src / "t.cu").write_text(orig)
    review = ReviewState.create(src, tmp_path / "out", [translation("t.cu", orig, orig.replace("cuda", "hip"))])
    review.save()
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = PortScreen(review.path)
        await app.push_screen(screen)
        await app.workers.wait_for_complete()
        view = screen.query_one("#port-hunk-body")
        await until(pilot, lambda: view.show_vertical_scrollbar)
        assert not view.show_horizontal_scrollbar
        await pilot.press("end")
        await pilot.pause()
        assert "no risk flags" in "".join(s.text for s in view.render_line(view.size.height - 1))
        await pilot.press("j")
        await pilot.pause()
        assert not view.show_vertical_scrollbar and view.scroll_y == 0
        assert view.virtual_size.width == view.content_region.width  # drawn at the full width again


# --- the doctor's facts: the HIP version for the translation, the gfx arch for the compile check ----------

def _rows(option_list) -> list[str]:
    return [str(option_list.get_option_at_index(i).prompt) for i in range(option_list.option_count)]


@pytest.mark.slow
async def test_translation_lists_too_new_apis_under_a_rocm_61_doctor_report_like_hipify(tmp_path, capsys):
    ws = Workspace(tmp_path)
    save_rocm61_gfx90a(ws)
    src = tmp_path / "proj"
    src.mkdir()
    (src / "k.cu").write_text(NEW_API_KERNEL)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        await pilot.press(*str(src), "enter", "enter")  # the set-up form: source, default output
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.review is not None and screen.review.hip_version == HIP_61
        results = screen.query_one("#port-results")
        rows = _rows(results)
        assert results.display and rows[0].startswith(f"⚠ 2 API(s) newer than the target ROCm/HIP {HIP_61}:")
        assert any(f"target ROCm/HIP {HIP_61}" in n for n in notifications(app))
        assert any(r.strip().startswith("k.cu:7  hipGetFuncBySymbol needs ROCm >= 6.2.0  → Enter") for r in rows)
        for name in NEW_APIS:
            assert name in rows[0]
        assert any("newer than HIP" in n for n in notifications(app))
        # a place inside a hunk opens it
        results.focus()
        results.highlighted = next(i for i, r in enumerate(rows) if "k.cu:7" in r and "its hunk" in r)
        await pilot.press("enter")
        await pilot.pause()
        assert any("hipGetFuncBySymbol" in x for x in screen.nav.current.new_lines)
        screen_too_new = screen.review.api_counts("too_new")
    # the command line, same workspace, same project: the same list
    assert main(["hipify", str(src), "--out", str(tmp_path / "cli-hip"), "--workspace", str(tmp_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["too_new"] == screen_too_new == {name: 1 for name in NEW_APIS}
    assert summary["hip_version"] == HIP_61


async def test_write_compile_checks_for_the_doctors_arch(tmp_path, monkeypatch):
    ws, review = _workspace(tmp_path, {"main.cu": KERNEL})
    save_rocm61_gfx90a(ws)  # an MI250X: gfx90a, not the default gfx942
    hipcc = RecordingHipcc()
    monkeypatch.setattr("hipwizard.port.output.compile_check.SubprocessRunner", lambda: hipcc)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        await pilot.press("A", "w")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmWrite)  # the flagged hunk is still pending
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert hipcc.archs and set(hipcc.archs) == {"gfx90a"}
        assert screen.last_write.arch == "gfx90a" and screen.last_write.files[0].check == "ok"
        assert "ℹ compile-checked for gfx90a" in _rows(screen.query_one("#port-results"))
    assert _disk(review).last_write.files == 1


async def test_r_rereads_the_sources_and_reconciles_keeping_decisions(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "a.cu").write_text(KERNEL)
    (src / "b.cu").write_text(KERNEL.replace("scale", "twice"))
    ws = Workspace(tmp_path)
    review = services.translate(ws, "proj", "proj-hip", backend="builtin").review
    a_hunks = [h.hunk_id for h in review.hunks if h.file == "a.cu"]
    review.decide(a_hunks, "accepted")
    review.decide([h.hunk_id for h in review.hunks if h.file == "b.cu"], "rejected")
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("nothing to reconcile" in n for n in notifications(app))
        (src / "b.cu").write_text(KERNEL.replace("scale", "twice").replace("cudaFree(d);", "cudaFree(d);  // rel"))
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("Sources changed" in n for n in notifications(app))
        assert screen.review is not review and "b.cu" in screen.nav.files
        assert a_hunks and all(screen.review.decision(h).state == "accepted" for h in a_hunks)
        changed = [h for h in screen.review.hunks if screen.review.decision(h.hunk_id).changed]
        assert [(h.file, screen.review.decision(h.hunk_id).was) for h in changed] == [("b.cu", "rejected")]
        assert not screen.busy
    assert _disk(review).counts().accepted == len(a_hunks)


LONG = "kernels/attention/flash_attention_forward_kernel.cu"
LONG_DIR = "src/a_long_folder_name/main.cu"


async def test_long_file_names_stay_on_one_line_at_80x24(tmp_path):
    ws, _review = _workspace(tmp_path, {LONG: KERNEL, LONG_DIR: KERNEL})
    app = HipwizardApp(ws)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open(app, pilot)
        files = screen.query_one("#port-filelist")
        first = _rows(files)[0].split("\n")
        # the name itself is longer than the column: its end is kept
        assert len(first) == 2 and first[0].startswith("○ …") and first[0].endswith("_forward_kernel.cu")
        second = _rows(files)[1].split("\n")
        assert second[0].startswith("○ src/") and second[0].endswith("…/main.cu")  # the name fits: kept whole
        assert _rows(files) and all(len(line) <= files.text_width() for row in _rows(files) for line in row.split("\n"))
        assert files.virtual_size.height == 4  # two rows, two lines each: nothing wrapped
        await pilot.resize_terminal(160, 45)
        await pilot.pause()
        assert _rows(files)[1].split("\n")[0] == f"○ {LONG_DIR}"  # room again: the whole path


# --- snapshots at 80x24 and 160x45 ----------------------------------------------------------------------

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])


@SIZES
def test_snapshot_setup_form(tmp_path, snap_compare, size):
    async def go(pilot):
        await _settle(pilot)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False  # a blinking cursor would make the picture depend on timing
        await pilot.pause()
    assert snap_compare(HipwizardApp(Workspace(tmp_path)), terminal_size=size, run_before=go)


def test_snapshot_first_hunk_wide(tmp_path, snap_compare):
    assert snap_compare(_snap_app(tmp_path), terminal_size=(160, 45), run_before=_settle)


@SIZES
def test_snapshot_api_notes_under_rocm_61(tmp_path, snap_compare, size):
    ws = Workspace(tmp_path)
    save_rocm61_gfx90a(ws)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "k.cu").write_text(NEW_API_KERNEL)
    (tmp_path / "proj" / "main.cu").write_text(KERNEL)
    services.translate(ws, "proj", "proj-hip", backend="builtin")
    assert snap_compare(HipwizardApp(ws), terminal_size=size, run_before=_settle)


def test_snapshot_long_file_names_80x24(tmp_path, snap_compare):
    ws, _review = _workspace(tmp_path, {LONG: KERNEL, LONG_DIR: KERNEL})
    assert snap_compare(HipwizardApp(ws), terminal_size=(80, 24), run_before=_settle)


@pytest.mark.slow
@needs_hipcc
def test_snapshot_after_write_with_compile_error_80x24(tmp_path, snap_compare):
    app, _review = _compile_error_app(tmp_path)

    async def go(pilot):
        await _settle(pilot)
        await _write_and_wait(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()
    assert snap_compare(app, terminal_size=(80, 24), run_before=go)
