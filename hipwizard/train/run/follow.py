"""One run followed for a live view: ``RunWatch`` plus what a view adds to it — the GPU readings so far,
which GPU processes are the run's, and the ceiling MFU is judged against — copied out as ``RunSnapshot``s.

``services.follow(run_dir, ws)`` makes one; the Run tab's watch loop polls it and posts its snapshots, so
the loop itself never reaches into ``stop`` (process groups) or the workspace state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipwizard.gpu import GpuReading
from hipwizard.train.run.snapshot import GpuHistory, HostSample, RunSnapshot, snapshot
from hipwizard.train.run.stop import run_processes
from hipwizard.train.run.watch import RunWatch, WatchUpdate

if TYPE_CHECKING:
    from hipwizard.train.planning.ceiling import Ceiling


class RunFollower:
    """Follows ``watch`` for a view; call it from one thread (the one that polls)."""

    def __init__(self, watch: RunWatch, ceiling: Ceiling | None = None) -> None:
        self.watch = watch
        self.ceiling = ceiling
        self.gpu_history = GpuHistory()
        self.reading: GpuReading | None = None

    def state(self) -> str:
        return self.watch.state()

    def poll(self) -> WatchUpdate:
        """Read what is new in the run's logs."""
        return self.watch.poll()

    def add_reading(self, reading: GpuReading) -> None:
        """A GPU telemetry reading: kept as the latest and added to the history the view plots."""
        self.reading = reading
        self.gpu_history.add(reading)

    def snapshot(self, state: str, *, host: HostSample | None = None) -> RunSnapshot:
        """What the view shows now; a running run's own GPU memory is told apart when the reading lists
        processes."""
        pids = None
        if state == "running" and self.reading is not None and any(s.processes for s in self.reading.samples):
            pids = set(run_processes(self.watch.manifest))
        return snapshot(self.watch, state, gpu=self.reading, gpu_history=self.gpu_history, host=host,
                        run_pids=pids, ceiling=self.ceiling)
