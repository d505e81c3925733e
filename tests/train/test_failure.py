"""The failure cause in one line, and the config field, from recorded real logs."""

from __future__ import annotations

from pathlib import Path

from hipwizard.train.run.failure import diagnose, last_exception

FIX = Path(__file__).parent.parent / "fixtures" / "llamafactory"


def _log(name: str) -> str:
    return (FIX / name).read_text()


def test_unknown_option_rejected_by_llamafactory():
    f = diagnose(_log("stdout-reject-bad_key-cpu.log"), {"bogus_key": 3}, 1)
    assert f.kind == "rejected" and f.field == "bogus_key" and "bogus_key" in f.line


def test_undefined_dataset():
    f = diagnose(_log("stdout-reject-bad_ds-cpu.log"), {"dataset": "nosuchset"}, 1)
    assert f.field == "dataset" and "nosuchset" in f.line


def test_missing_model_folder():
    f = diagnose(_log("stdout-reject-bad_model-cpu.log"), {"model_name_or_path": "/tmp/nonexistent/model"}, 1)
    assert f.kind == "missing-file" and f.field == "model_name_or_path" and "/tmp/nonexistent/model" in f.line


def test_bf16_on_cpu_message_shown_word_for_word():
    f = diagnose(_log("stdout-reject-bad_bf16-cpu.log"), {"bf16": True}, 1)
    assert f.field == "bf16" and f.line.startswith("Your setup doesn't support bf16/gpu")


def test_oom_nccl_import_and_plain_exit():
    oom = ("Traceback (most recent call last):\n  File \"x.py\", line 1\n"
           "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of "
           "191.98 GiB of which 1.2 GiB is free.\n")
    f = diagnose(oom, {"per_device_train_batch_size": 8}, 1)
    assert f.kind == "oom" and f.field == "per_device_train_batch_size" and "3.50 GiB" in f.line
    nccl = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n"
    assert diagnose(nccl, {"deepspeed": "ds.json"}, 1).kind == "nccl"
    imp = "ModuleNotFoundError: No module named 'flash_attn'\n"
    f = diagnose(imp, {"flash_attn": "fa2"}, 1)
    assert f.kind == "import" and f.field == "flash_attn"
    assert diagnose("all good\n", {}, 0) is None
    assert diagnose("", {}, -9).kind == "exit"


def test_nccl_warning_in_a_healthy_run_is_not_a_failure():
    text = _log("stdout-8b-lora-zero3-h200.log")
    assert "ProcessGroupNCCL" in text
    assert diagnose(text, {"deepspeed": "ds.json"}, 0) is None
    assert last_exception(text) is None
