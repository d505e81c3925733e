"""Bounded reading of configs from outside: regular files only, a size cap, and a YAML whose aliases
cannot multiply it (a "billion laughs" alias bomb) or whose nesting cannot exhaust the parser's stack.

``read_regular_text(path, limit)`` opens without blocking (a FIFO never hangs it), refuses anything but a
regular file (``/dev/zero``, a FIFO, a socket) and a file over ``limit`` bytes, and decodes UTF-8; it
raises ``InputRefused`` (an ``OSError``, so callers that already handle unreadable files handle it).
``check_yaml_bounds(text)`` walks the YAML event stream once (linear in the text, aliases counted by the
size of what they stand for) and raises ``InputRefused`` past ``MAX_YAML_NODES`` or ``MAX_YAML_DEPTH``.
"""

from __future__ import annotations

import os
import stat

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # LLaMA-Factory configs are a few kB; a DeepSpeed JSON too
MAX_YAML_NODES = 100_000  # values once every alias is expanded
MAX_YAML_DEPTH = 64  # nested mappings/lists


class InputRefused(OSError):
    """A file or text refused before it is parsed: the message says why, in words."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "refused"


def read_regular_text(path: str | os.PathLike[str], limit: int = MAX_CONFIG_BYTES) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``limit`` bytes. ``FileNotFoundError`` /
    ``IsADirectoryError`` / ``PermissionError`` as ``open`` gives them; ``InputRefused`` for anything that
    is not a regular file or is larger; ``UnicodeDecodeError`` for bytes that are not UTF-8."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(st.st_mode):
            raise InputRefused(f"{path} is not a regular file ({_kind(st.st_mode)}); give a config file")
        if st.st_size > limit:
            raise InputRefused(f"{path} is {st.st_size / 2**20:.1f} MiB; a config is read up to {limit // 2**20} MiB")
        chunks, size = [], 0
        while size <= limit:  # the file may grow after fstat: still read no more than the cap
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise InputRefused(f"{path} is over {limit // 2**20} MiB; a config is read up to that")
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "not a plain file"


def check_yaml_bounds(text: str) -> None:
    """``InputRefused`` when ``text``, with its aliases expanded, holds more than ``MAX_YAML_NODES``
    values or nests deeper than ``MAX_YAML_DEPTH``. Malformed YAML passes: the loader reports it."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, DocumentEndEvent, ScalarEvent

    sizes: dict[str, int] = {}  # anchor -> values it stands for
    stack: list[list] = []  # open collections: [anchor, size so far]
    total = 0
    try:
        for event in YAML(typ="rt").parse(text):
            if isinstance(event, CollectionStartEvent):
                stack.append([event.anchor, 1])
                if len(stack) > MAX_YAML_DEPTH:
                    raise InputRefused(f"nests deeper than {MAX_YAML_DEPTH} levels")
                continue
            if isinstance(event, ScalarEvent):
                size, anchor = 1, event.anchor
            elif isinstance(event, AliasEvent):
                size, anchor = sizes.get(event.anchor, 1), None
            elif isinstance(event, CollectionEndEvent) and stack:
                anchor, size = stack.pop()
            else:
                if isinstance(event, DocumentEndEvent):
                    stack.clear()
                continue
            if anchor:
                sizes[anchor] = size
            if stack:
                stack[-1][1] += size
            else:
                total += size
            if total + sum(s for _, s in stack) > MAX_YAML_NODES:
                raise InputRefused(f"expands to more than {MAX_YAML_NODES:,} values (aliases of aliases: "
                                   f"an alias bomb?)")
    except YAMLError:
        return
