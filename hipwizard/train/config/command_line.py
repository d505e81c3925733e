"""A ``llamafactory-cli train ...`` command line (or a shell script holding one, the ``train.sh`` teams
bring) read as the LLaMA-Factory config it stands for.

``--key value``, ``--key=value``, ``key=value`` and a bare ``--flag`` (true) are taken, line
continuations joined, environment prefixes (``FORCE_TORCHRUN=1 llamafactory-cli ...``) and comments
skipped; every option is kept, the ones hipwizard does not know included. A config file named first
(``llamafactory-cli train base.yaml key=value``) is the base the options override. Values are YAML
scalars (``5e-5`` a float, ``true`` a bool, ``q_proj,v_proj`` text).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_CLI = re.compile(r"(^|[\s/;&|])llamafactory-cli\s+train\b")


@dataclass
class Converted:
    values: dict[str, object] = field(default_factory=dict)
    base: str | None = None  # a config file the command line starts from


def is_command_line(text: str) -> bool:
    """True when ``text`` holds a ``llamafactory-cli train`` command (not a YAML mapping)."""
    return bool(_CLI.search(text))


def _scalar(value: str):
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        got = YAML(typ="safe", pure=True).load(value)
    except YAMLError:
        return value
    return got if isinstance(got, (int, float, bool, str)) and got is not None else value


def convert(text: str) -> Converted:
    """The options of the first ``llamafactory-cli train`` command in ``text``; ValueError when there is
    none or it cannot be split (an unclosed quote)."""
    joined = re.sub(r"\\\r?\n", " ", text)
    for line in joined.splitlines():
        if not _CLI.search(line):
            continue
        tokens = shlex.split(line, comments=True)
        at = next(i for i in range(len(tokens) - 1)
                  if tokens[i].rsplit("/", 1)[-1] == "llamafactory-cli" and tokens[i + 1] == "train")
        return _options(tokens[at + 2:])
    raise ValueError("no `llamafactory-cli train` command found")


def _options(args: list[str]) -> Converted:
    out = Converted()
    i = 0
    if args and not args[0].startswith("-") and "=" not in args[0]:
        out.base, i = args[0], 1
    while i < len(args):
        arg = args[i]
        if arg in ("&&", "||", ";", "|", "&"):
            break
        if arg.startswith("--"):
            key, eq, value = arg[2:].partition("=")
            if not eq:
                if i + 1 < len(args) and not args[i + 1].startswith("--") and args[i + 1] not in ("&&", "||", ";", "|", "&"):
                    value, i = args[i + 1], i + 1
                else:
                    value = "true"
        elif "=" in arg:
            key, _, value = arg.partition("=")
        else:
            raise ValueError(f"cannot read {arg!r}: options are --key value or key=value")
        out.values[key.replace("-", "_") if key.replace("-", "_").isidentifier() else key] = _scalar(value)
        i += 1
    return out
