"""Incremental tails, history (current vs cumulative rate), and the stdout scan, on recorded real logs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hipwizard.train.run import tail as tail_mod
from hipwizard.train.run.history import RunHistory, ema, parse_duration
from hipwizard.train.run.logscan import StdoutScan
from hipwizard.train.run.tail import FileTail, TrainerLogTail, last_record

FIX = Path(__file__).parent.parent / "fixtures" / "llamafactory"
PLAIN = FIX / "trainer_log-8b-lora-plain-h200.jsonl"


def test_file_not_there_yet_then_partial_line_then_rest(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    t = FileTail(path)
    assert t.poll().missing
    path.write_bytes(b'{"a": 1}\n{"b"')
    assert t.poll().lines == ['{"a": 1}']
    assert t.poll().lines == []
    with open(path, "ab") as fh:
        fh.write(b': 2}\n')
    assert t.poll().lines == ['{"b": 2}']


def test_truncation_and_replacement_reset(tmp_path):
    path = tmp_path / "log"
    path.write_text("one\ntwo\nthree\n")
    t = FileTail(path)
    assert len(t.poll().lines) == 3
    path.write_text("new\n")  # truncated by a restart with overwrite_output_dir
    chunk = t.poll()
    assert chunk.reset and chunk.lines == ["new"]
    other = tmp_path / "log2"
    other.write_text("first line of a replaced file, longer than before\n")
    os.replace(other, path)
    chunk = t.poll()
    assert chunk.reset and chunk.lines == ["first line of a replaced file, longer than before"]
    path.unlink()
    assert t.poll().reset


def test_only_new_bytes_are_read(tmp_path, monkeypatch):
    path = tmp_path / "trainer_log.jsonl"
    lines = PLAIN.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:5]))
    t = TrainerLogTail(path)
    assert len(t.attach().records) == 5
    with open(path, "a") as fh:
        fh.write(lines[5])
    before = t.tail.offset
    batch = t.poll()
    assert [r["current_steps"] for r in batch.records] == [6]
    assert t.tail.offset - before == len(lines[5].encode())


def test_invalid_json_lines_are_counted_not_fatal(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    path.write_text('{"current_steps": 1, "loss": 2.0}\nnot json\n[1, 2]\n{"current_steps": 2, "loss": 1.5}\n')
    batch = TrainerLogTail(path).attach()
    h = RunHistory()
    h.add(batch.records, batch.invalid)
    assert [s for s, _ in h.loss] == [1, 2] and h.invalid_lines == 2


def test_history_from_real_log_current_rate_differs_from_cumulative_average():
    h = RunHistory()
    h.add(json.loads(line) for line in PLAIN.read_text().splitlines())
    assert len(h.loss) == 12 and h.progress == (12, 12)
    # last record is the final summary (no loss): it updates progress, not the loss curve
    assert h.last.loss is None and h.last.throughput_avg == pytest.approx(5727.67, rel=0.1)
    cur, avg = h.current_tokens_per_s, h.average_tokens_per_s
    assert cur is not None and avg is not None
    # the cumulative average still carries the slow first step; the current rate does not
    assert cur > avg * 1.1
    assert "step 12/12" in h.summary() and "tok/s" in h.summary()
    smooth = [v for _, v in h.smoothed_loss]
    assert len(smooth) == 12 and smooth[0] == pytest.approx(h.loss[0][1])


def test_durations_and_ema():
    assert parse_duration("0:01:18") == 78 and parse_duration("1 day, 2:00:00") == 93600
    assert parse_duration(None) is None and parse_duration("soon") is None
    assert ema([1.0, 1.0, 1.0]) == pytest.approx([1.0, 1.0, 1.0])


def test_attach_to_a_huge_log_samples_the_old_part_and_reads_the_recent_part(tmp_path, monkeypatch):
    monkeypatch.setattr(tail_mod, "FULL_READ_BYTES", 20_000)
    monkeypatch.setattr(tail_mod, "RECENT_BYTES", 5_000)
    monkeypatch.setattr(tail_mod, "OVERVIEW_POINTS", 50)
    path = tmp_path / "trainer_log.jsonl"
    with open(path, "w") as fh:
        for i in range(1, 2001):
            fh.write(json.dumps({"current_steps": i, "total_steps": 2000, "loss": 1 / i}) + "\n")
    t = TrainerLogTail(path)
    batch = t.attach()
    steps = [r["current_steps"] for r in batch.records]
    assert batch.sampled and steps == sorted(steps) and steps[-1] == 2000
    assert 40 <= steps.index(steps[-1]) < 200  # sampled overview + full recent tail, far fewer than 2000
    # the last RECENT_BYTES are read in full: a contiguous run of steps up to the end
    k = len(steps) - 1
    while k > 0 and steps[k - 1] == steps[k] - 1:
        k -= 1
    assert len(steps[k:]) > 50 and steps[-1] == 2000
    with open(path, "a") as fh:
        fh.write(json.dumps({"current_steps": 2001, "loss": 0.1}) + "\n")
    assert [r["current_steps"] for r in t.poll().records] == [2001]


def test_last_record_reads_the_end():
    assert last_record(PLAIN)["current_steps"] == 12
    with_loss = [json.loads(line) for line in PLAIN.read_text().splitlines() if '"loss"' in line]
    assert last_record(PLAIN, key="loss") == with_loss[-1]


def test_stdout_scan_grad_norm_warnings_and_bar():
    scan = StdoutScan()
    scan.feed((FIX / "stdout-8b-lora-plain-h200.log").read_text().splitlines())
    assert len(scan.grad_norms) == 12 and scan.grad_norms[0] == pytest.approx(0.3434)
    assert scan.warnings >= 2 and scan.errors == 0
    assert scan.progress_bar.startswith("100%")
    assert scan.final_metrics["train_loss"] == "12.58"
    assert not any(line.text.lstrip().startswith(("8%|", "100%|")) for line in scan.lines)


def test_stdout_scan_marks_the_traceback_as_error():
    scan = StdoutScan()
    scan.feed((FIX / "stdout-reject-bad_key-cpu.log").read_text().splitlines())
    errors = [line.text for line in scan.lines if line.level == "error"]
    assert errors[0].startswith("Traceback") and errors[-1].startswith("ValueError: Some keys are not used")
    assert not scan.in_traceback
