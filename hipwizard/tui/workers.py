"""One worker style for every screen (harlequin's way): thread workers that return a value, one place
that routes the result back to the UI thread, one error handler.

A screen (or widget) mixes in ``Jobs`` and starts work with::

    self.start_job("write", services.write, ws, review, done=self._written, progress=True)

``fn`` runs in a thread; with ``progress=True`` it gets a ``progress=`` keyword (a ``ProgressFn``) whose
reports arrive as ``messages.WorkProgress`` (handle ``on_work_progress``). When ``fn`` returns, ``done``
gets its value on the UI thread. When it raises, ``failed`` (if given) gets a one-line text, else a
notification shows it; never a traceback, never a dead app. Jobs of one name are exclusive: starting
one again cancels the older one, and its result is dropped.
"""

from __future__ import annotations

import asyncio
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from textual.worker import Worker, WorkerState

if TYPE_CHECKING:
    from textual.dom import DOMNode

    _Node = DOMNode  # the checker sees a Jobs as what it is mixed into: an App, a Screen or a Widget
else:
    _Node = object

from hipwizard.errors import UserError
from hipwizard.progress import Progress
from hipwizard.tui.messages import WorkProgress


def one_line(error: BaseException) -> str:
    """What a failure says to a user: a ``UserError``'s own words, else the type and first line."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, UserError):
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class Jobs(_Node):
    """Mixin for a ``Widget``/``Screen``: ``start_job`` and the one ``Worker.StateChanged`` handler."""

    def start_job(self, name: str, fn: Callable[..., Any], *args: Any,
                  done: Callable[[Any], None] | None = None, failed: Callable[[str], None] | None = None,
                  progress: bool = False, daemon: bool = False, **kwargs: Any) -> Worker:
        """``daemon=True``: ``fn`` runs in a daemon thread that quitting never joins (Textual's thread workers
        run in the event loop's executor, which ``asyncio.run`` joins at exit): for work that may hang on an
        outside program, such as the doctor's probes."""
        if progress:
            kwargs["progress"] = partial(self._post_progress, name)
        work = partial(fn, *args, **kwargs)
        if daemon:
            worker = self.run_worker(_in_daemon_thread(work, name), name=name, group=f"job-{name}",
                                     exclusive=True, exit_on_error=False)
        else:
            worker = self.run_worker(work, name=name, group=f"job-{name}", thread=True,
                                     exclusive=True, exit_on_error=False)
        self._job_callbacks()[worker] = (done, failed)
        return worker

    def _job_callbacks(self) -> dict:
        callbacks = self.__dict__.get("_hw_job_callbacks")
        if callbacks is None:
            callbacks = self.__dict__["_hw_job_callbacks"] = {}
        return callbacks

    def _post_progress(self, name: str, progress: Progress) -> None:
        try:
            self.post_message(WorkProgress(name, progress))
        except RuntimeError:  # the app quit while a daemon job still ran: nobody is listening
            pass

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        callbacks = self._job_callbacks()
        if event.worker not in callbacks:
            return
        if event.state == WorkerState.SUCCESS:
            done, _ = callbacks.pop(event.worker)
            if done is not None:
                done(event.worker.result)
        elif event.state == WorkerState.ERROR:
            _, failed = callbacks.pop(event.worker)
            text = one_line(event.worker.error) if event.worker.error is not None else "the job failed"
            if failed is not None:
                failed(text)
            else:
                self.app.notify(f"✖ {text}", severity="error", timeout=8)  # what Widget.notify does
        elif event.state == WorkerState.CANCELLED:
            callbacks.pop(event.worker, None)


async def _in_daemon_thread(work: Callable[[], Any], name: str) -> Any:
    """Run ``work`` in a daemon thread and await its result; cancelling (exclusive restart, screen closed, app
    quit) stops the waiting, and the thread's late result is dropped."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if answer.done():
            return
        answer.set_result(value) if ok else answer.set_exception(value)

    def target() -> None:
        try:
            outcome = (True, work())
        except BaseException as exc:  # reported through the worker, like a thread worker's error
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop is closed: the app has gone
            pass

    threading.Thread(target=target, daemon=True, name=f"job {name}").start()
    return await answer

