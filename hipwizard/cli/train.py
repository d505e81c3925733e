"""``hipwizard train ...`` plus the run-management commands (``runs``, ``attach``, ``stop``).

The plan side (config, DeepSpeed JSON, memory estimate, advisor) lives in ``train_plan``; the run side
(launch, tail, stop) in ``train_run``. Each adds its own ``train`` sub-commands here.
"""

from __future__ import annotations

from hipwizard.cli import train_calibrate, train_plan, train_run


def add_commands(sub) -> None:
    train = sub.add_parser("train", help="step 4: plan, launch and watch a LLaMA-Factory fine-tune")
    train_sub = train.add_subparsers(dest="train_command", metavar="ACTION", required=True)
    for module in (train_plan, train_run, train_calibrate):
        module.add_train_commands(train_sub)
    train_run.add_commands(sub)
