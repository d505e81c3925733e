"""``hipwizard train ...`` plus the run-management commands (``runs``, ``attach``, ``stop``).

The plan side (config, DeepSpeed JSON, memory estimate, advisor) lives in ``plan_cli``; the run side
(launch, tail, stop) in ``run_cli``. Each adds its own ``train`` sub-commands here.
"""

from __future__ import annotations

from hipwizard.cli import import_optional

PARTS = ("hipwizard.train.plan_cli", "hipwizard.train.run_cli")


def add_commands(sub) -> None:
    modules = [m for m in (import_optional(name) for name in PARTS) if m is not None]
    if not modules:
        return
    train = sub.add_parser("train", help="step 4: plan, launch and watch a LLaMA-Factory fine-tune")
    train_sub = train.add_subparsers(dest="train_command", metavar="ACTION", required=True)
    for module in modules:
        module.add_train_commands(train_sub)
        extra = getattr(module, "add_commands", None)
        if extra is not None:
            extra(sub)
