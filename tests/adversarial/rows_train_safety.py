"""Adversarial rows of issue 27 (safe by default) for the Train step: see table.py for what every row checks."""

from __future__ import annotations

from .rows_port import link
from .rows_train import recipe, run
from .table import Case, both, write

PRECIOUS = "the user's own file\n"


def run_dir_with_link(name: str):
    """``r/`` a run directory (its config.yaml launchable) whose ``name`` is a link to the user's file."""
    return both(recipe("config.yaml"), write("precious.txt", PRECIOUS), link(f"r/{name}", "precious.txt"))


ROWS: list[Case] = [
    # a link where a run file goes: refused before anything starts, the link's target untouched
    *(Case(f"run-dir-{name.replace('.', '-')}-is-a-link", run("r"), run_dir_with_link(name), 2,
           (name, "symbolic link"), unchanged=("precious.txt",), absent=("r/run.json",) if name != "run.json" else ())
      for name in ("train.log", "run.json", "exit.json", "stop_requested")),
]


def alias_bomb(levels: int = 9) -> str:
    """The "billion laughs" in YAML: each level a list of nine aliases of the one before (9**9 values)."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\nmodel_name_or_path: m\n"


def fifo(rel: str):
    def build(tmp) -> None:
        import os

        os.mkfifo(tmp / rel)
    return build


def plan_of(target: str) -> tuple[str, ...]:
    return ("train", "plan", target, "--workspace", "ws")


ROWS += [
    # inputs that would keep `train plan` busy or eat memory: one line, exit 2, at once
    Case("plan-yaml-alias-bomb", plan_of("bomb.yaml"), write("bomb.yaml", alias_bomb()), 2,
         ("bomb.yaml", "refused", "alias")),
    Case("plan-yaml-nested-20000", plan_of("deep.yaml"), write("deep.yaml", "a: " + "[" * 20000 + "]" * 20000), 2,
         ("deep.yaml", "deeper than")),
    Case("plan-dev-zero", plan_of("/dev/zero"), lambda tmp: None, 2, ("/dev/zero", "not a regular file",
         "character device")),
    Case("plan-fifo", plan_of("pipe.yaml"), fifo("pipe.yaml"), 2, ("pipe.yaml", "not a regular file", "FIFO")),
    Case("plan-yaml-5-mib", plan_of("big.yaml"), write("big.yaml", "# pad\n" * (5 * 2**20 // 6) + "a: 1\n"), 2,
         ("big.yaml", "MiB")),
    Case("run-dir-config-alias-bomb", run("r"), both(recipe("config.yaml"), write("r/config.yaml", alias_bomb())), 2,
         ("config.yaml", "alias"), absent=("r/run.json", "r/train.log")),
    # a DeepSpeed path naming a device: read as unreadable (a note), never hangs the plan
    Case("plan-deepspeed-dev-zero", ("train", "plan", "r/c.yaml", "--workspace", "ws"),
         recipe(deepspeed="/dev/zero"), 0, ("could not be read",), stdout_empty=False),
]

ROWS += [
    # a train.sh whose base config is itself (or a script naming it back): a RecursionError traceback before
    Case("plan-script-names-itself-as-base", plan_of("train.sh"),
         write("train.sh", "llamafactory-cli train train.sh --learning_rate 1e-4\n"), 2,
         ("train.sh", "base config", "not a YAML config")),
    Case("run-scripts-name-each-other-as-base", ("train", "run", "a.sh", "--workspace", "ws"),
         both(write("a.sh", "llamafactory-cli train b.sh --learning_rate 1e-4\n"),
              write("b.sh", "llamafactory-cli train a.sh\n")), 2, ("b.sh", "not a YAML config"), absent=("ws/runs",)),
]
