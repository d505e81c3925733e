"""Why a run failed, in one line, and the config field most likely involved.

Works on the end of the run's stdout log (the traceback is there) and its config. Rules go from the
most specific cause to the most general; the last resort is the final exception line itself, so a
rejection message from LLaMA-Factory is always shown word for word, never swallowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from hipwizard.train.config.bounded import check_yaml_bounds, read_regular_text
from hipwizard.train.run.manifest import CONFIG_NAME, read_exit
from hipwizard.train.run.tail import read_end

_EXC_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Interrupt)\w*): (.+)$")


@dataclass(frozen=True)
class Failure:
    """``line``: what went wrong, for a person; ``field``: the config key to look at (or None)."""
    kind: str
    line: str
    field: str | None = None
    detail: str = ""  # the original exception line


_RANK_PREFIX = re.compile(r"^\[(?:default)?rank\d+\]:")  # torchrun prefixes each worker's lines
# What torchrun and llamafactory-cli raise when a worker failed: they hide the worker's own error.
_LAUNCHER_WRAPPERS = ("CalledProcessError", "ChildFailedError")


def last_exception(text: str) -> str | None:
    """The last ``SomeError: message`` line of the text (the outermost exception of the traceback).
    With several ranks, the worker's error wins over the launcher's wrapper that follows it."""
    wrapper = None
    for line in reversed(text.splitlines()):
        m = _RANK_PREFIX.match(line)
        body = line[m.end():].lstrip(" ") if m else line
        exc = _EXC_LINE.match(body.strip())
        if exc and not body.startswith((" ", "\t")):
            if exc.group(1) in _LAUNCHER_WRAPPERS:
                wrapper = wrapper or body.strip()
                continue
            return body.strip()
    return wrapper


def _field_with_value(config: Mapping[str, Any], text: str) -> str | None:
    """The config key whose (path-like) value appears in ``text``."""
    for key, value in config.items():
        if isinstance(value, str) and len(value) > 2 and value in text:
            return key
    return None


def diagnose(log_text: str, config: Mapping[str, Any] | None = None, returncode: int | None = None) -> Failure | None:
    """The cause of a failed run from its log and config; None when nothing in the log says why."""
    config = config or {}
    exc = last_exception(log_text) or ""
    low = log_text.lower()

    if re.search(r"(cuda|hip|torch\.)\s*out ?of ?memory|outofmemoryerror|hipErrorOutOfMemory", log_text, re.I):
        m = re.search(r"Tried to allocate ([\d.]+ [GM]iB)", log_text)
        need = f" (tried to allocate {m.group(1)})" if m else ""
        fld: str | None = "per_device_train_batch_size"
        if config.get("cutoff_len") and int(config.get("cutoff_len") or 0) > 4096:
            fld = "cutoff_len"
        return Failure("oom", f"GPU out of memory{need}: lower the batch size or sequence length, or use ZeRO-3/offload",
                       fld, exc)
    if "defaultcpuallocator: can't allocate memory" in low or (returncode in (-9, 137) and "killed" in low):
        return Failure("host-oom", "host RAM exhausted (the kernel killed the trainer): reduce offload or workers",
                       "deepspeed" if config.get("deepspeed") else "preprocessing_num_workers", exc)
    if re.search(r"nccl|rccl", exc, re.I) or re.search(
            r"Watchdog caught collective operation timeout|nccl(Internal|System|Unhandled\w*|Invalid\w*)Error|"
            r"NCCL error|RCCL error", log_text):
        return Failure("nccl", f"NCCL/RCCL communication error: {exc or 'a collective failed or timed out'}"[:240],
                       "deepspeed" if config.get("deepspeed") else None, exc)
    m = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", log_text) or \
        re.search(r"ImportError: (.+)", log_text)
    if m:
        mod = m.group(1)
        fld = next((k for k in ("flash_attn", "deepspeed", "quantization_method", "optim")
                    if config.get(k) and k.split("_")[0] in mod.lower()), None)
        return Failure("import", f"import error: {m.group(0).split(': ', 1)[-1]}"[:240], fld, exc)
    m = re.search(r"(?:FileNotFoundError|No such file or directory)[^\n]*?'([^'\n]+)'", log_text) or \
        re.search(r"Repo id must be in the form[^\n]*'([^'\n]+)'", log_text)
    if m:
        path = m.group(1)
        return Failure("missing-file", f"missing file or folder: {path}",
                       _field_with_value(config, path) or ("model_name_or_path" if "Repo id" in m.group(0) else None), exc)
    m = re.search(r"Some keys are not used by the HfArgumentParser: \[([^\]]*)\]", log_text)
    if m:
        keys = [k.strip(" '\"") for k in m.group(1).split(",") if k.strip()]
        return Failure("rejected", f"LLaMA-Factory does not know the option(s) {', '.join(keys)}", keys[0] if keys else None, exc)
    m = re.search(r"Undefined dataset (\S+) in", exc)
    if m:
        return Failure("rejected", f"dataset {m.group(1)} is not in dataset_info.json ({exc})", "dataset", exc)
    if "doesn't support bf16" in log_text:
        return Failure("rejected", exc.split(": ", 1)[-1], "bf16", exc)
    if exc:
        backticked = re.findall(r"`(\w+)`", exc)
        fld = next((b for b in backticked if b in config), backticked[0] if backticked else None)
        return Failure("error", exc[:300], fld, exc)
    if returncode not in (None, 0):
        return Failure("exit", f"the trainer exited with code {returncode} without an error message", None)
    return None


def diagnose_run(manifest) -> Failure | None:
    """``diagnose`` on a launched run: the end of its log, its config, its recorded exit code."""

    run_dir = Path(manifest.run_dir)
    try:
        text = read_regular_text(run_dir / CONFIG_NAME)
        check_yaml_bounds(text)  # InputRefused is an OSError
        config = yaml.safe_load(text) or {}
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        config = {}
    end = read_exit(run_dir)
    returncode = end.returncode if end else None
    text = read_end(manifest.log_path)
    if not text.strip() and returncode not in (None, 0):
        return Failure("exit", f"the trainer died before writing anything (exit code {returncode})", None)
    return diagnose(text, config if isinstance(config, dict) else {}, returncode)
