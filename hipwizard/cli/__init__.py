"""Entry point ``hipwizard``.

``hipwizard [DIR]`` opens the TUI on the workspace in DIR (default: the current folder), ``--web`` serves it
to a browser behind a token, Host and Origin checks (``hipwizard.cli.web``); a first argument that names no
folder but is close to a sub-command (``statsu``) is refused as a typo. ``hipwizard SUBCOMMAND ...`` runs a
step headless. Each step of ``hipwizard.steps.STEPS`` contributes its
sub-commands from its module here (``hipwizard.cli.<step>``) with ``add_commands(subparsers)``; handlers
return an exit code. ``main`` is the one error path of every command (``EXIT_CODES`` below, shown in
``--help``): bad input raises ``UserError`` and becomes one line on stderr with exit code 2 — never a
traceback; an output path the system refuses (``--out /proc/x``, a folder under a regular file) is bad input
too; a closed pipe (``hipwizard status | head -1``) ends quietly.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import io
import os
import sys
from typing import Sequence

from hipwizard import __version__
from hipwizard.errors import UserError
from hipwizard.steps import cli_modules, subcommands
from hipwizard.textsafe import inert_line, inert_stdout

EXIT_CODES = """exit codes (every sub-command):
  0    success: every check passed, the plan fits, the action was done
  1    a check failed: a doctor check, a plan with errors, a comparison out of tolerance, a failed run
  2    bad input: a missing, unreadable or malformed file or option; one line on stderr names it
  130  interrupted (Ctrl-C)
  141  the reader of the output went away (e.g. `| head -1`); nothing else is printed"""


class InertParser(argparse.ArgumentParser):
    """argparse, with its error line made inert: it quotes the user's own arguments (``unrecognized arguments:
    ...``), which may carry terminal escapes. Sub-command parsers are made of this class too."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {inert_line(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = InertParser(
        prog="hipwizard",
        usage="%(prog)s [--demo] [--web [--host HOST] [--port PORT]] [DIR]\n"
              "       %(prog)s SUBCOMMAND ...",
        description=(
            "Take CUDA kernels and a LLaMA-Factory fine-tuning recipe from NVIDIA to AMD Instinct MI300X "
            "(ROCm): doctor -> port -> parity -> train. With no sub-command, opens the wizard on the "
            "workspace in DIR (default: the current folder)."
        ),
        epilog=EXIT_CODES + "\n\nRun `hipwizard SUBCOMMAND --help` for a step's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hipwizard {__version__}")
    # Shown here for --help only (SUPPRESS: they never land in a sub-command's namespace); the wizard's own
    # parser below reads them, from the same definitions.
    _add_app_options(parser.add_argument_group("the wizard (no SUBCOMMAND; DIR: its workspace folder)"),
                     default=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", prog="hipwizard")
    for name in cli_modules():
        importlib.import_module(name).add_commands(sub)
    return parser


def _add_app_options(group, default=None) -> None:
    """The wizard's options (``hipwizard [options] [DIR]``), for its parser and the top-level --help."""
    flag = {} if default is None else {"default": default}
    group.add_argument("--demo", action="store_true", **flag,
                       help="open the embedded demo workspace (in DIR when given; each instance its own)")
    group.add_argument("--web", action="store_true", **flag,
                       help="serve the wizard to a browser instead of this terminal; prints the URL to open, "
                            "with a token made for this launch (required on the page and its websocket)")
    group.add_argument("--host", default=default, metavar="HOST",
                       help="with --web: the address to listen on (default 127.0.0.1, loopback only; "
                            "any other address is warned about and still needs the token)")
    group.add_argument("--port", default=default, metavar="PORT",
                       help="with --web: the TCP port to listen on (default 8000)")


def build_app_parser() -> argparse.ArgumentParser:
    parser = InertParser(prog="hipwizard", add_help=False)
    parser.add_argument("dir", nargs="?", default=None)
    _add_app_options(parser)
    return parser


# Top-level sub-command names, known without importing the step modules: opening the app must not
# pay for every step's CLI (start-up is measured by benchmarks/startup.py). A test keeps this in sync.
SUBCOMMANDS = subcommands()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with stdout closed (`>&-`): the command still runs, its output goes nowhere
        sys.stdout = open(os.devnull, "w")
    _tolerate_unencodable_output()
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # a reader gone away shows here, not in the interpreter's shutdown
        return code
    except UserError as exc:
        return _error(with_flag(exc))
    except BrokenPipeError:
        return _pipe_closed()
    except OSError as exc:
        # An output path the system refuses (`--out /proc/x`, a folder under a regular file, a full disk):
        # the user's input, named in one line.
        return _error(_os_error_line(exc))
    except KeyboardInterrupt:
        return 130


def with_flag(exc: UserError) -> str:
    """A service's refusal as the command line says it: the field at fault named by its flag
    (``VRAM must be ... (--vram)``); services speak the user's words, the flags are this face's."""
    return f"{exc} ({'--' + exc.field.replace('_', '-')})" if exc.field else str(exc)


def _tolerate_unencodable_output() -> None:
    """A stdout/stderr that cannot encode every character (``PYTHONIOENCODING=ascii``, a C locale without
    UTF-8 coercion) writes ``\\u25cb`` for what it cannot show instead of raising mid-output; a non-UTF-8
    file name (surrogate-escaped) likewise. ``surrogateescape`` (Python's own choice in a C locale) raises on
    such characters too; a forgiving ``errors`` the user chose (``replace``...) is kept."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) not in ("strict", "surrogateescape"):
            continue
        if not isinstance(stream, io.TextIOWrapper):
            continue  # a replaced stream (StringIO...): leave it
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass  # not a text stream we can change (a replaced or closed one): leave it


def _dispatch(argv: list[str]) -> int:
    if argv and (argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help", "--version")):
        args = build_parser().parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 0
        with inert_stdout():  # text from outside in any command's output never acts on the terminal
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
    _refuse_mistyped_command(argv, args)
    if args.web:
        from hipwizard.cli import web

        host = web.parse_host(args.host if args.host is not None else web.DEFAULT_HOST)
        port = web.parse_port(args.port if args.port is not None else web.DEFAULT_PORT)
    elif args.host is not None or args.port is not None:
        raise UserError(f"{'--host' if args.host is not None else '--port'} only applies with --web")
    from hipwizard.workspace import Workspace

    if args.demo:
        from hipwizard.demo_workspace import open_demo_workspace

        demo = open_demo_workspace(args.dir)
        workspace = demo.workspace
        if demo.notice:
            print(f"hipwizard: {inert_line(demo.notice)}", file=sys.stderr, flush=True)
    else:
        workspace = Workspace.open(args.dir or ".", must_exist=True)
    if args.web:
        return web.serve(workspace.root, host, port)
    from hipwizard.tui.app import HipwizardApp

    app = HipwizardApp(workspace)
    app.run()
    return app.return_code or 0  # a crash in the app is not a success


def _refuse_mistyped_command(argv: list[str], args: argparse.Namespace) -> None:
    """``hipwizard statsu``: a first argument that names no folder but is close to a sub-command is a typo
    of that command, not a workspace to look for. A folder that exists always wins; ``--demo DIR`` makes
    its folder, so a new name there is no typo."""
    word = args.dir
    if not argv or argv[0] != word or args.demo or os.sep in word or os.path.isdir(word):
        return
    close = difflib.get_close_matches(word, sorted(SUBCOMMANDS), n=1, cutoff=0.75)
    if close:
        raise UserError(f"unknown command {word!r} (did you mean {close[0]!r}?)")


if __name__ == "__main__":
    raise SystemExit(main())
