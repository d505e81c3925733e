"""All checks, in checklist order: EnvReport + CompatMatrix -> [Check].

Each check says its status (ok / warn / fail / n/a), what was found, why it matters and the fix. On an
NVIDIA machine AMD-only checks are n/a ("source side"); on a machine with no GPU every GPU check says so
and why it is skipped.
"""

from __future__ import annotations

from hipwizard.doctor.judge import machine, stack
from hipwizard.doctor.judge.agreement import check_evidence
from hipwizard.doctor.judge.context import CheckContext
from hipwizard.doctor.judge.matrix import CompatMatrix
from hipwizard.doctor.models import Check, EnvReport

CHECKS = (
    machine.check_gpu, machine.check_driver, machine.check_rocm, machine.check_arch, machine.check_partitions,
    machine.check_bf16,
    stack.check_torch_build, stack.check_torch_rocm_match, stack.check_torch_devices,
    stack.check_deepspeed, stack.check_flash_attn, stack.check_bitsandbytes, stack.check_llamafactory,
    machine.check_toolchain, check_evidence, stack.check_probes,
)


def run_checks(env: EnvReport, matrix: CompatMatrix, replay: bool = False) -> list[Check]:
    """Every check on ``env``. A check that crashes becomes a warn line naming the bug, not a traceback.
    ``replay``: the outputs are a recording, so a check whose inputs were not recorded says unknown."""
    ctx = CheckContext(env, matrix, replay)
    out: list[Check] = []
    for fn in CHECKS:
        try:
            out.append(fn(ctx))
        except Exception as exc:  # a bug in one check must not hide the others
            name = fn.__name__.removeprefix("check_")
            out.append(Check(name, name, "warn", f"this check failed internally: {type(exc).__name__}: {exc}",
                             "hipwizard bug", "please report it with `hipwizard doctor --record DIR`"))
    return out
