"""The one way to name the workspace on the command line: ``--workspace DIR``, the same option, metavar and
help wording in every sub-command that uses one (``status`` and ``report`` also keep their older positional
``DIR``, so existing scripts still work; giving both, differently, is an error)."""

from __future__ import annotations

from hipwizard.errors import UserError

HELP = "the workspace folder{what} (default: the current folder)"


def add_workspace_option(parser, what: str = "", *, type=str, default=".", positional: bool = False) -> None:
    """``--workspace DIR`` on ``parser``; ``what`` says what the command keeps there (", where the report is
    saved"). ``positional``: also accept the older ``[DIR]`` form (read both with ``workspace_dir``)."""
    if positional:
        parser.add_argument("dir", nargs="?", default=None, metavar="DIR", help="the same as --workspace DIR")
    parser.add_argument("--workspace", metavar="DIR", type=type, default=None if positional else default,
                        help=HELP.format(what=what))


def workspace_dir(args, default: str = ".") -> str:
    """The workspace named by ``--workspace DIR`` or the positional ``DIR``; UserError when both name
    different folders."""
    option, positional = getattr(args, "workspace", None), getattr(args, "dir", None)
    if option is not None and positional is not None and str(option) != str(positional):
        raise UserError(f"the workspace is named twice ({positional} and --workspace {option}): give one")
    return str(option if option is not None else positional if positional is not None else default)
