"""JSON from outside read with bounds: a nesting limit and a size cap, so that a hostile or damaged file (a
safetensors header nested 100 000 deep, a multi-gigabyte "state" file) is one clear ``ValueError``, never a
``RecursionError`` traceback or a process that reads without end.

``loads(text)`` is ``json.loads`` that raises ``ValueError`` (``JsonTooDeep``) past ``MAX_DEPTH`` levels of
arrays/objects; ``read_json(path)`` reads at most ``cap`` bytes (``ValueError`` naming the cap when the file
is larger), then ``loads``. Callers already turn ``ValueError`` into their one-line error.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MAX_DEPTH = 64  # hipwizard's own files nest about 6 deep; a capture's metadata about 8
STATE_CAP = 64 * 2**20


class JsonTooDeep(ValueError):
    """The document nests arrays/objects deeper than the limit."""


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)``; ``ValueError`` for invalid JSON and for nesting deeper than ``max_depth``."""
    try:
        data = json.loads(text)
    except RecursionError:  # deeper than the interpreter's own limit: certainly past ours
        raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels") from None
    if _depth_over(data, max_depth):
        raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels")
    return data


def _depth_over(data: Any, limit: int) -> bool:
    """Whether ``data`` nests containers deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def read_capped(path: str | Path, cap: int) -> bytes:
    """The bytes of ``path``, at most ``cap``; ``ValueError`` naming the cap when the file holds more.
    ``OSError`` as ``open`` raises it, and for anything but a regular file: a FIFO would block the open
    until someone writes to it (``status`` hung on a FIFO named ``.hipwizard/doctor.json``), a device never
    ends. Opened without blocking, then checked on the open file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        raw = fh.read(cap + 1)
    if len(raw) > cap:
        raise ValueError(f"larger than {_size(cap)}, more than hipwizard reads from such a file")
    return raw


def read_json(path: str | Path, *, cap: int = STATE_CAP, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON document in ``path``, read with ``read_capped`` and ``loads``. ``ValueError`` (also
    ``UnicodeDecodeError``) for a document too big, too deep or not JSON; ``OSError`` as ``open`` raises it."""
    return loads(read_capped(path, cap).decode("utf-8"), max_depth=max_depth)


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n} bytes"
