"""Write a capture while the model runs: each hooked output is copied to the host and written as soon as
its module returns, so the file write overlaps the rest of the pass instead of following it.

On a GPU, the hook's clone is copied into pinned host memory on a side stream (the compute stream never
waits for it) and a writer thread appends it to a ``tensorfile.TensorStream`` once the copy's event has
fired. On the CPU the writer thread alone overlaps the disk with the pass. ``finish`` adds what was not
streamed (inputs, gradients) and writes the header; a module called twice (its last output is the one
kept, as in the batch path) makes ``finish`` fall back to writing the whole file at the end.

torch is imported inside the functions.
"""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from typing import Any

from hipwizard.parity.capture.model import tensor_entries
from hipwizard.parity.tensorfile import META_KEY, TensorStream, write_tensor_file


class CaptureSink:
    """Streams hooked tensors to ``path`` (see the module docstring). Use as a context manager: leaving
    it without ``finish`` (an error) removes the partial file."""

    def __init__(self, path: str | Path, reserve: int = 1 << 18):
        self.path = Path(path)
        self._stream = TensorStream(self.path, reserve)
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._repeated = False
        self._queued: set[str] = set()
        self._side: Any = None  # a torch.cuda.Stream once a GPU tensor comes (torch is imported late)
        self._thread = threading.Thread(target=self._write_loop, name="hipwizard-capture-writer", daemon=True)
        self._thread.start()

    def put(self, name: str, tensor):
        """Queue ``tensor`` (a clone the caller will not change) as ``name``; returns its host copy, filled
        once ``drain`` returns. A name seen before is not streamed again (see the module docstring)."""
        import torch  # heavy: torch

        if tensor.is_cuda:
            if self._side is None:
                self._side = torch.cuda.Stream(tensor.device)
            self._side.wait_stream(torch.cuda.current_stream(tensor.device))
            with torch.cuda.stream(self._side):
                host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
                host.copy_(tensor, non_blocking=True)
                tensor.record_stream(self._side)  # the allocator must not reuse it before the copy is done
                event = torch.cuda.Event()
                event.record(self._side)
        else:
            host, event = tensor.contiguous(), None
        if name in self._queued or self._repeated:
            self._repeated = True  # the file is written whole at the end instead
        else:
            self._queued.add(name)
            self._queue.put((name, host, event))
        return host

    def _write_loop(self) -> None:

        while (item := self._queue.get()) is not None:
            if self._error is not None:
                continue
            name, host, event = item
            try:
                if event is not None:
                    event.synchronize()
                tag, shape, buf = tensor_entries({name: host})[name]
                self._stream.add(name, tag, shape, buf)
            except BaseException as exc:  # noqa: BLE001 - re-raised by drain, on the caller's thread
                self._error = exc

    def drain(self) -> None:
        """Wait until every queued tensor is copied and written; re-raise a writer error here."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._side is not None:
            self._side.synchronize()
        if self._error is not None:
            raise self._error

    def finish(self, tensors: dict[str, Any], meta: dict) -> int:
        """Complete the file with the ``tensors`` not streamed yet and ``meta``; returns its size."""

        self.drain()
        if self._repeated:
            self._stream.abort()
            return write_tensor_file(self.path, tensor_entries(tensors), {META_KEY: json.dumps(meta)})
        rest = {n: t for n, t in tensors.items() if n not in self._stream}
        for name, (tag, shape, buf) in tensor_entries(rest).items():
            self._stream.add(name, tag, shape, buf)
        return self._stream.finish({META_KEY: json.dumps(meta)})

    def __enter__(self) -> "CaptureSink":
        return self

    def __exit__(self, exc_type, *_exc) -> None:
        if exc_type is not None:
            try:
                self.drain()
            except BaseException:  # noqa: BLE001 - the original error is the one to report
                pass
            self._stream.abort()
