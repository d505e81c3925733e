"""Watch one run: its trainer log, its stdout log, its state — the core behind ``attach`` and the Run tab.

``RunWatch.attach()`` loads the history so far (fast even for huge logs, see ``tail``); ``poll()``
reads only what is new and says how much came in, so a caller can redraw only when something changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.train.config.yaml_io import load_yaml
from hipwizard.train.planning.ceiling import utilisation
from hipwizard.train.planning.model_shape import load_shape
from hipwizard.train.run.alarms import Alarm, detect_alarms, metric_points
from hipwizard.train.run.failure import Failure, diagnose_run
from hipwizard.train.run.history import RunHistory
from hipwizard.train.run.launcher import read_config
from hipwizard.train.run.logscan import StdoutScan
from hipwizard.train.run.manifest import RunManifest, load_manifest
from hipwizard.train.run.runs import RunState, run_state
from hipwizard.train.run.tail import FileTail, TrainerLogTail
from hipwizard.train.run.throughput import EpochShape, SteadyRate, banner_of, steady_of_records, token_count_mode

STDOUT_ATTACH_BYTES = 256 * 1024  # the log view shows recent lines; older ones stay in the file


@dataclass
class WatchUpdate:
    points: int = 0  # new trainer records
    lines: int = 0  # new stdout lines
    reset: bool = False  # the run started over (overwrite): history was cleared
    invalid: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.points or self.lines or self.reset)


class RunWatch:
    """Follows the run in ``run_dir`` (which must have been launched: it needs ``run.json``)."""
    def __init__(self, run_dir: str | Path):
        run_dir = Path(run_dir).expanduser().resolve()
        manifest = load_manifest(run_dir)
        if manifest is None:
            if not run_dir.is_dir():
                raise UserError(f"{run_dir} does not exist")
            raise UserError(f"{run_dir} has no run.json: it was never launched")
        self.run_dir = run_dir
        self.manifest: RunManifest = manifest
        self.trainer = TrainerLogTail(manifest.trainer_log_path)
        self.stdout = FileTail(manifest.log_path)
        self.history = RunHistory()
        self.scan = StdoutScan()

    def attach(self) -> WatchUpdate:
        batch = self.trainer.attach()
        self.history.add(batch.records, batch.invalid)
        self.history.sampled = batch.sampled
        try:
            size = self.manifest.log_path.stat().st_size
        except OSError:
            size = 0
        if size > STDOUT_ATTACH_BYTES:
            from hipwizard.train.run.tail import _line_start_after

            self.stdout.poll(max_bytes=0)
            self.stdout.skip_to(_line_start_after(self.manifest.log_path, size - STDOUT_ATTACH_BYTES))
        lines = 0
        while True:
            chunk = self.stdout.poll()
            self.scan.feed(chunk.lines)
            lines += len(chunk.lines)
            if not chunk.more:
                break
        return WatchUpdate(len(batch.records), lines, False, batch.invalid)

    def poll(self) -> WatchUpdate:
        batch = self.trainer.poll()
        if batch.reset:
            self.history.reset()
        self.history.add(batch.records, batch.invalid)
        chunk = self.stdout.poll()
        if chunk.reset:
            self.scan.reset()
        self.scan.feed(chunk.lines)
        return WatchUpdate(len(batch.records), len(chunk.lines), batch.reset or chunk.reset, batch.invalid)

    def alarms(self) -> list[Alarm]:
        """The run's alarms so far (``alarms.detect_alarms`` over its history and stdout grad_norms)."""
        return detect_alarms(metric_points(self.history.points, self.scan.grad_by_key))

    def utilisation(self, tokens_per_s: float, *, ceiling=None, gpu_name: str = "") -> str:
        """MFU of ``tokens_per_s`` for this run's config and model (``ceiling.utilisation``), one line; empty
        when the model's shape cannot be read. The shape is read once (config.json, no weights)."""
        if not hasattr(self, "_shape"):
            self._shape = self._config = None
            try:

                loaded = load_yaml(self.run_dir / "config.yaml")
                self._config = loaded.config
                self._shape = load_shape(loaded.config.model_name_or_path, loaded.base_dir).shape
            except Exception:  # a run view without MFU is fine; a crashed poll is not
                pass
        if self._shape is None or self._config is None:
            return ""
        nproc = int(self.manifest.env_delta.get("NPROC_PER_NODE", "1") or 1)
        return utilisation(tokens_per_s, self._config, self._shape, gpus=nproc, ceiling=ceiling,
                           gpu_name=gpu_name).line()

    def steady(self) -> SteadyRate | None:
        """The run's steady rate so far (``throughput.steady_of_records``): tokens as the config says the trainer
        counts them (``include_num_input_tokens_seen``: padding included with ``true``, real with
        ``non_padding``), samples of each step from the trainer's banner (the short last step of an epoch as it
        is). Config and banner are read once (the banner is in the log before the first step)."""
        if not hasattr(self, "_counting"):
            try:
                raw = read_config(self.run_dir)
            except UserError:
                raw = {}
            self._counting = (token_count_mode(raw.get("include_num_input_tokens_seen")),
                              bool(raw.get("dataloader_drop_last")))
            self._epoch: EpochShape | None = None
        if self._epoch is None and self.history.points:
            self._epoch = banner_of(self.manifest.log_path, drop_last=self._counting[1], max_bytes=4 << 20)
        return steady_of_records(self.history.points, token_count=self._counting[0], shape=self._epoch)

    def state(self) -> RunState:
        return run_state(self.manifest, self.run_dir)[0]

    def failure(self) -> Failure | None:
        return diagnose_run(self.manifest)
