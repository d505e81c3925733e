"""The Run tab's actions for long runs: resume from the last checkpoint (R), run again with NCCL_DEBUG=INFO (N),
and the alarm when the attached run stalls. A mixin of ``RunView`` (which holds the attached run, its last
snapshot and the launch job); the work is the train step's services (``train.resume``,
``train.run_again_with_nccl_debug``), the same the CLI's ``train run --resume [--nccl-debug]`` calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hipwizard import train
from hipwizard.tui.train.dialogs import ConfirmAction

if TYPE_CHECKING:
    from textual.containers import Vertical

    from hipwizard.tui.workers import Jobs

    class _ViewBase(Jobs, Vertical):
        """For the type checker only: the view ``LongRunActions`` is mixed into (``start_job``, widget API)."""
else:
    _ViewBase = object


class LongRunActions(_ViewBase):
    """R and N on the attached run; ``stall_alarm`` when its state turns to stalled."""

    # What RunView holds, declared (named here, not imported: the view imports this module):
    attached: str | None  # the run folder the view follows
    snap: Any  # its last train.RunSnapshot, None before the first
    workspace: Any  # the Workspace
    if TYPE_CHECKING:
        def _busy(self) -> bool: ...

        def _launched(self, launched: Any) -> None: ...

        def _launch_failed(self, text: str) -> None: ...

    def _ended_run(self, verb: str) -> str | None:
        if not self.attached or self.snap is None:
            self.notify("attach a run first (enter or o)", severity="warning")
            return None
        if self.snap.state == "running":
            self.notify(f"{self.snap.name} is running: stop it (X) before you {verb}", severity="warning")
            return None
        return self.attached

    def action_resume(self) -> None:
        """R: continue the attached run from its newest complete checkpoint, after a confirmation (a stalled
        run is stopped first by the confirmation's own words: the user stops it with X)."""
        run_dir = self._ended_run("resume it")
        if run_dir is None or self.snap is None:
            return
        if self.snap.state == "stalled":
            self.notify("the run is stalled but alive: stop it (X) first, then resume (R)", severity="warning")
            return
        self.app.push_screen(
            ConfirmAction(f"Resume {self.snap.name} from its last checkpoint?",
                          "LLaMA-Factory continues from the newest complete checkpoint-N; the log and the loss "
                          "curve go on in this view.", "Resume"),
            lambda ok: self._relaunch(train.resume, run_dir) if ok else None)

    def action_nccl_debug(self) -> None:
        """N: run the attached run again with NCCL_DEBUG=INFO (from its last checkpoint when it has one)."""
        run_dir = self._ended_run("run it again")
        if run_dir is None or self.snap is None:
            return
        if self.snap.state == "stalled":
            self.notify("the run is stalled but alive: stop it (X) first, then N", severity="warning")
            return
        self.app.push_screen(
            ConfirmAction(f"Run {self.snap.name} again with NCCL_DEBUG=INFO?",
                          "RCCL/NCCL then writes its rings, channels and each collective into train.log; it "
                          "continues from the last checkpoint when there is one.", "Run again"),
            lambda ok: self._relaunch(train.run_again_with_nccl_debug, run_dir) if ok else None)

    def _relaunch(self, service, run_dir: str) -> None:
        if self._busy():
            return
        self.start_job("launch", service, self.workspace, run_dir, done=self._launched,
                       failed=self._launch_failed, progress=True)

    def stall_alarm(self, before: str | None, now: str) -> None:
        """The alarm, once, when the attached run turns stalled: a bell and a notice that stays."""
        if now == "stalled" and before != "stalled" and self.snap is not None:
            self.app.bell()
            self.notify(f"⏸ {self.snap.name} STALLED: {self.snap.stall or 'no new step'}", severity="error",
                        timeout=30)
