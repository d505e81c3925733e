"""The "Sources agree" check: every fact that more than one source states, and whether they agree.

Disagreements are findings of their own (``evidence.findings``): two tools naming different archs or GPU
counts, torch built for another ROCm line than the host's, a driver that ships with another ROCm line.
"""

from __future__ import annotations

from hipwizard.doctor.judge.context import CheckContext
from hipwizard.doctor.models import Check
from hipwizard.doctor.read.evidence import findings


def check_evidence(ctx: CheckContext) -> Check:
    why = ("Each fact is read from every output that states it; when the outputs disagree, one of them is stale, "
           "from another machine or container, or the setup is mixed.")
    title = "Sources agree"
    problems, notes = findings(ctx.env, ctx.matrix)
    crossed = [f for f in ctx.env.facts if len(f.evidence) > 1]
    agreed = [f.describe() for f in crossed if f.agree]
    if problems:
        found = "disagree: " + "; ".join(problems)
        if agreed:
            found += ". Agree: " + "; ".join(agreed)
        return Check("evidence", title, "warn", found + "".join(f". Note: {n}" for n in notes), why,
                     "re-run the disagreeing tools on the same machine (and container), or align torch, ROCm "
                     "and the driver on one ROCm line")
    if not crossed:
        single = "; ".join(f.describe() for f in ctx.env.facts[:4])
        return Check("evidence", title, "n/a", "one source per fact: nothing to cross-check"
                     + (f" ({single})" if single else "") + "".join(f". Note: {n}" for n in notes), why)
    return Check("evidence", title, "ok", "; ".join(agreed) + "".join(f". Note: {n}" for n in notes), why)
