"""Entry point ``hipwizard``.

``hipwizard [DIR]`` opens the TUI on the workspace in DIR (default: the current folder);
``hipwizard SUBCOMMAND ...`` runs a step headless. Each step of ``hipwizard.steps.STEPS`` contributes its
sub-commands from its module here (``hipwizard.cli.<step>``) with ``add_commands(subparsers)``; handlers
return an exit code. ``main`` is the one error path of every command (``EXIT_CODES`` below, shown in
``--help``): bad input raises ``UserError`` and becomes one line on stderr with exit code 2 — never a
traceback; an output path the system refuses (``--out /proc/x``, a folder under a regular file) is bad input
too; a closed pipe (``hipwizard status | head -1``) ends quietly.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from hipwizard import __version__
from hipwizard.errors import UserError
from hipwizard.steps import cli_modules, subcommands
from hipwizard.textsafe import inert_line


EXIT_CODES = """exit codes (every sub-command):
  0    success: every check passed, the plan fits, the action was done
  1    a check failed: a doctor check, a plan with errors, a comparison out of tolerance, a failed run
  2    bad input: a missing, unreadable or malformed file or option; one line on stderr names it
  130  interrupted (Ctrl-C)
  141  the reader of the output went away (e.g. `| head -1`); nothing else is printed"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hipwizard",
        description=(
            "Take CUDA kernels and a LLaMA-Factory fine-tuning recipe from NVIDIA to AMD Instinct MI300X "
            "(ROCm): doctor -> port -> parity -> train. With no sub-command, opens the wizard on the "
            "workspace in DIR."
        ),
        epilog=EXIT_CODES + "\n\nRun `hipwizard SUBCOMMAND --help` for a step's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hipwizard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND")
    for name in cli_modules():
        importlib.import_module(name).add_commands(sub)
    return parser


def build_app_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hipwizard", add_help=False)
    parser.add_argument("dir", nargs="?", default=None)
    parser.add_argument("--web", action="store_true", help="serve the wizard in a browser on localhost")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--demo", action="store_true",
                        help="open the embedded demo workspace (in DIR when given; each instance its own)")
    return parser


# Top-level sub-command names, known without importing the step modules: opening the app must not
# pay for every step's CLI (start-up is measured by benchmarks/startup.py). A test keeps this in sync.
SUBCOMMANDS = subcommands()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with stdout closed (`>&-`): the command still runs, its output goes nowhere
        sys.stdout = open(os.devnull, "w")
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # a reader gone away shows here, not in the interpreter's shutdown
        return code
    except UserError as exc:
        return _error(str(exc))
    except BrokenPipeError:
        return _pipe_closed()
    except OSError as exc:
        # An output path the system refuses (`--out /proc/x`, a folder under a regular file, a full disk):
        # the user's input, named in one line.
        return _error(_os_error_line(exc))
    except KeyboardInterrupt:
        return 130


def _dispatch(argv: list[str]) -> int:
    if argv and (argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help", "--version")):
        args = build_parser().parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 0
        return int(args.func(args) or 0)
    return _open_app(argv)


def _error(message: str) -> int:
    line = " ".join(inert_line(message).split()) or "unknown error"  # names in it come from outside
    try:
        print(f"hipwizard: error: {line}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass  # no stderr to tell: the exit code still says it
    return 2


def _os_error_line(exc: OSError) -> str:
    what = exc.strerror or type(exc).__name__
    if exc.filename is None:
        return f"{what}: {exc}" if str(exc) and str(exc) != what else what
    target = f"{exc.filename} -> {exc.filename2}" if exc.filename2 else str(exc.filename)
    return f"cannot use {target}: {what}"


def _pipe_closed() -> int:
    # Python's recipe: the reader closed the pipe; point stdout at /dev/null so the interpreter's final
    # flush does not raise again, and end with the code a shell gives a process killed by SIGPIPE.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 141


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
        from hipwizard.demo_workspace import open_demo_workspace

        demo = open_demo_workspace(args.dir)
        workspace = demo.workspace
        if demo.notice:
            print(f"hipwizard: {demo.notice}", file=sys.stderr, flush=True)
    else:
        workspace = Workspace.open(args.dir or ".", must_exist=True)
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
