"""Entry point ``hipwizard``.

``hipwizard [DIR]`` opens the TUI on the workspace in DIR (default: the current folder);
``hipwizard SUBCOMMAND ...`` runs a step headless. Each step of ``hipwizard.steps.STEPS`` contributes its
sub-commands from its module here (``hipwizard.cli.<step>``) with ``add_commands(subparsers)``; handlers
return an exit code. Bad input raises ``UserError`` and becomes one line on stderr with exit code 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from hipwizard import __version__
from hipwizard.errors import UserError
from hipwizard.steps import cli_modules, subcommands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hipwizard",
        description=(
            "Take CUDA kernels and a LLaMA-Factory fine-tuning recipe from NVIDIA to AMD Instinct MI300X "
            "(ROCm): doctor -> port -> parity -> train. With no sub-command, opens the wizard on the "
            "workspace in DIR."
        ),
        epilog="Run `hipwizard SUBCOMMAND --help` for a step's options.",
    )
    parser.add_argument("--version", action="version", version=f"hipwizard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND")
    for name in cli_modules():
        importlib.import_module(name).add_commands(sub)
    return parser


def build_app_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hipwizard", add_help=False)
    parser.add_argument("dir", nargs="?", default=".")
    parser.add_argument("--web", action="store_true", help="serve the wizard in a browser on localhost")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--demo", action="store_true", help="open the embedded demo workspace")
    return parser


# Top-level sub-command names, known without importing the step modules: opening the app must not
# pay for every step's CLI (start-up is measured by benchmarks/startup.py). A test keeps this in sync.
SUBCOMMANDS = subcommands()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and (argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help", "--version")):
            args = build_parser().parse_args(argv)
            if args.command is None:
                build_parser().print_help()
                return 0
            return int(args.func(args) or 0)
        return _open_app(argv)
    except UserError as exc:
        print(f"hipwizard: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _subcommand_names(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _open_app(argv: list[str]) -> int:
    app_parser = build_app_parser()
    args, unknown = app_parser.parse_known_args(argv)
    if unknown:
        raise UserError(f"unknown argument {unknown[0]!r} (see `hipwizard --help`)")
    from hipwizard.workspace import Workspace

    if args.demo:
        from hipwizard.demo_workspace import prepare_demo_workspace

        workspace = prepare_demo_workspace()
    else:
        workspace = Workspace.open(args.dir)
    if args.web:
        return _serve_web(workspace.root, args.host, args.port)
    from hipwizard.tui.app import HipwizardApp

    HipwizardApp(workspace).run()
    return 0


def _serve_web(root, host: str, port: int) -> int:
    import shlex

    from textual_serve.server import Server

    command = f"{shlex.quote(sys.executable)} -m hipwizard {shlex.quote(str(root))}"
    Server(command, host=host, port=port, title="hipwizard").serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
