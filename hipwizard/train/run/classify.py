"""Name what happened to a stalled or failed run, with the lines that show it and what to do.

``classify`` reads the current attempt's train.log, the kernel log's GPU lines and the trainer processes'
stacks (``incident``) and returns one ``Diagnosis``: its kind, one line, the evidence (each line prefixed by
where it came from: ``log:``, ``kernel:``, ``stack <pid>:``) and a fix. Rules go from the most specific cause
to the most general; the kinds the run watcher already knows (OOM, host OOM, import, missing file, ...) come
from ``failure.diagnose`` when no hang/fault/collective rule matched, so a failure is never named twice
differently.

The patterns are the messages reported by the users of MI300X/ROCm runs (ROCm "HW Exception by GPU node-N
... reason: GPU Hang", "Memory access fault by GPU node-N ... Reason: Page not present or supervisor
privilege", amdgpu "VM_L2_PROTECTION_FAULT_STATUS", torch's "Watchdog caught collective operation timeout",
gloo's "Timed out waiting ... for recv operation to complete") and the stacks py-spy prints.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from hipwizard.train.run.failure import diagnose

EVIDENCE_MAX = 8


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # gpu-hang, memory-fault, collective-timeout, process-stopped, input-stall, oom, ...
    line: str
    fix: str
    evidence: list[str] = field(default_factory=list)
    field: str | None = None  # the config key to look at, when one is

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Diagnosis | None:
        try:
            return cls(str(data["kind"]), str(data["line"]), str(data["fix"]),
                       [str(e) for e in data.get("evidence") or []], data.get("field"))
        except (KeyError, TypeError):
            return None


_HANG = re.compile(r"HW Exception by GPU node|reason\s*:\s*GPU Hang|GPU Hang|ring \S+ timeout|GPU reset|"
                   r"amdgpu: GPU recovery|NVRM: Xid|GPU has fallen off the bus", re.I)
_FAULT = re.compile(r"Memory access fault by GPU|VM_L2_PROTECTION_FAULT|\[gfxhub\S*\] page fault|"
                    r"\[mmhub\S*\] page fault|illegal memory access|hipErrorIllegalAddress|"
                    r"an illegal memory access was encountered", re.I)
_COLLECTIVE = re.compile(r"Watchdog caught collective operation timeout|Timed out waiting \d+ms for (?:recv|send) "
                         r"operation|ProcessGroup\w*.*[Tt]imed? ?out|NCCL\w* .*timeout|collective operation timeout|"
                         r"DistBackendError.*[Tt]imed out|wait timeout after \d+ms", re.I)
_PEER_LOST = re.compile(r"Connection closed by peer|Connection reset by peer|ProcessGroupGloo.*(?:closed|reset)", re.I)
_STACK_COLLECTIVE = re.compile(r"\b(all_reduce|allreduce|all_gather|reduce_scatter|broadcast|barrier|"
                               r"_allgather_base|wait_stream|monitored_barrier)\b")
_STACK_INPUT = re.compile(r"_next_data|_get_data|dataloader|fetch \(|queue\.py|tokeniz|datasets/arrow|"
                          r"multiprocessing/connection|_try_get_data|_recv_bytes")

HANG_FIX = ("the GPU stopped answering (a hang or a hardware exception, then a driver reset): read the kernel "
            "lines below; check the card's health and RAS errors (amd-smi metric --ecc), bring amdgpu and its "
            "firmware to the versions your ROCm release supports, then resume from the last checkpoint; if it "
            "recurs at the same step, run again with HIP_LAUNCH_BLOCKING=1 to name the kernel")
FAULT_FIX = ("a GPU kernel touched memory it does not own: run again with AMD_SERIALIZE_KERNEL=3 "
             "(HIP_LAUNCH_BLOCKING=1) to name the kernel; fused kernels (flash-attn, Liger, custom ops) and a torch "
             "built for another ROCm are the usual causes: turn them off one by one")
COLLECTIVE_FIX = ("one rank did not reach the collective the others wait in: its stack (below) says where it is; run "
                  "again with NCCL_DEBUG=INFO for RCCL's own account, check the node's links with `hipwizard doctor` "
                  "(missing XGMI links, ACS/IOMMU) and unset NCCL/RCCL variables copied from other machines; raise "
                  "ddp_timeout only when one rank legitimately works longer (rank 0 saving a big checkpoint)")
STOPPED_FIX = ("a trainer process is stopped (SIGSTOP, Ctrl-Z or a debugger holds it): continue it (kill -CONT PID) "
               "or stop the run and resume it from the last checkpoint")
INPUT_FIX = ("the trainer waits for its data: tokenise ahead (tokenized_path), raise dataloader_num_workers, "
             "and check the dataset's disk or network mount")
KILLED_FIX = ("SIGKILL comes from outside the trainer: the kernel's OOM killer (no such line was readable in the kernel "
              "log since the run started), a job scheduler's time or memory limit, or kill -9; resume from the last "
              "checkpoint (hipwizard train run RUN_DIR --resume)")
UNKNOWN_STALL_FIX = ("no step came and nothing names why: read the stacks below (the innermost frame of each "
                     "trainer is where it waits), and run again with NCCL_DEBUG=INFO if it uses several GPUs")


def _matches(pattern: re.Pattern, lines: list[str], source: str) -> list[str]:
    return [f"{source}: {ln.strip()[:300]}" for ln in lines if pattern.search(ln)][-EVIDENCE_MAX:]


def _innermost(text: str) -> str:
    """The first frame line of a py-spy dump's first thread (py-spy prints the innermost frame first)."""
    frames = [ln.strip() for ln in text.splitlines() if ln.startswith("    ")]
    return frames[0] if frames else ""


def classify(log_text: str, *, kernel: list[str] | None = None, stacks: list[tuple[int, str, str]] | None = None,
             stalled: bool = False, returncode: int | None = None, config: dict | None = None) -> Diagnosis | None:
    """The cause of a stall (``stalled``) or failure; ``stacks`` are (pid, process status, py-spy dump)."""
    kernel, stacks = kernel or [], stacks or []
    log_lines = log_text.splitlines()

    evidence = _matches(_HANG, log_lines, "log") + _matches(_HANG, kernel, "kernel")
    if evidence:
        return Diagnosis("gpu-hang", "GPU hang / hardware exception", HANG_FIX, evidence[-EVIDENCE_MAX:])
    evidence = _matches(_FAULT, log_lines, "log") + _matches(_FAULT, kernel, "kernel")
    if evidence:
        return Diagnosis("memory-fault", "GPU memory-access fault", FAULT_FIX, evidence[-EVIDENCE_MAX:])
    evidence = _matches(_COLLECTIVE, log_lines, "log")
    if evidence:
        evidence += [f"stack {pid} ({status}): {_innermost(text)}" for pid, status, text in stacks if _innermost(text)]
        return Diagnosis("collective-timeout", "a collective (all-reduce / all-gather / barrier) timed out",
                         COLLECTIVE_FIX, evidence[-EVIDENCE_MAX:], "ddp_timeout")
    stopped = [(pid, status) for pid, status, _ in stacks if status in ("stopped", "tracing-stop")]
    if stalled and stopped:
        return Diagnosis("process-stopped", f"trainer process {', '.join(str(p) for p, _ in stopped)} is stopped",
                         STOPPED_FIX, [f"process {pid}: state {status}" for pid, status in stopped])
    if stalled:
        in_coll = [(pid, text) for pid, _, text in stacks if _STACK_COLLECTIVE.search(text)]
        in_input = [(pid, text) for pid, _, text in stacks if _STACK_INPUT.search(_first_thread(text))]
        if in_coll:
            return Diagnosis("collective-hang", f"{len(in_coll)} of {len(stacks)} trainer(s) wait in a collective",
                             COLLECTIVE_FIX, [f"stack {pid}: {_frame(text, _STACK_COLLECTIVE)}" for pid, text in in_coll])
        if in_input:
            return Diagnosis("input-stall", "the training loop waits for its input pipeline", INPUT_FIX,
                             [f"stack {pid}: {_frame(_first_thread(text), _STACK_INPUT)}" for pid, text in in_input])
    evidence = _matches(_PEER_LOST, log_lines, "log")
    if evidence and not stalled:
        return Diagnosis("peer-lost", "another rank went away mid-collective (it crashed or was killed first)",
                         "look at the other ranks' (or nodes') logs for the first error: this rank only lost "
                         "its peer", evidence)
    if not stalled and returncode is not None and returncode < 0:
        killed = _matches(re.compile(r"Out of memory: Killed process|oom-kill", re.I), kernel, "kernel")
        if killed:
            return Diagnosis("host-oom", "host RAM exhausted: the kernel's OOM killer ended a process of the run",
                             _FIXES["host-oom"], killed)
        if "Traceback (most recent call last)" not in log_text:
            sig = -returncode
            name = {9: "SIGKILL", 15: "SIGTERM", 6: "SIGABRT", 11: "SIGSEGV", 7: "SIGBUS"}.get(sig, f"signal {sig}")
            return Diagnosis("killed", f"the trainer was ended by {name} with no error of its own",
                             KILLED_FIX if sig == 9 else f"{name} came from outside or from a crash in native code: "
                             "read the end of train.log and the kernel lines; resume from the last checkpoint",
                             [f"exit code {returncode}"])
    if not stalled:
        failure = diagnose(log_text, config or {}, returncode)
        if failure is not None:
            ev = [f"log: {failure.detail}"] if failure.detail else []
            return Diagnosis(failure.kind, failure.line, _FIXES.get(failure.kind, "see the line above"), ev,
                             failure.field)
        return None
    return Diagnosis("stalled", "stalled: no step and no known cause in the logs", UNKNOWN_STALL_FIX,
                     [f"stack {pid} ({status}): {_innermost(text)}" for pid, status, text in stacks if _innermost(text)])


def _first_thread(text: str) -> str:
    """The main thread's part of a py-spy dump (the first ``Thread`` block)."""
    blocks = re.split(r"\n(?=Thread )", text)
    main = [b for b in blocks if '"MainThread"' in b]
    return main[0] if main else (blocks[1] if len(blocks) > 1 else text)


def _frame(text: str, pattern: re.Pattern) -> str:
    return next((ln.strip() for ln in text.splitlines() if pattern.search(ln)), "")


_FIXES = {
    "oom": "lower per_device_train_batch_size or cutoff_len, or use ZeRO-3 / offload",
    "host-oom": "reduce CPU offload and dataloader/preprocessing workers, or add swap/RAM",
    "nccl": COLLECTIVE_FIX,
    "import": "install the missing package in the run's environment",
    "missing-file": "fix the path in config.yaml",
    "rejected": "fix the option in config.yaml",
}
