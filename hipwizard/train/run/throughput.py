"""Steady tokens/s from the tokens each step really had: the one function calibration, the Run view and the
GPU benchmarks use.

A step is not always a full batch. The Trainer (transformers 4.5x-5.x, ``_inner_training_loop``) cuts an
epoch into ``ceil(micro-batches / accumulation)`` optimizer steps; the last one takes the remainder: fewer
micro-batches, and its last micro-batch holds ``examples mod batch`` samples (``dataloader_drop_last`` off,
the default). 500 samples at 4 x 4 are 31 steps of 16 and one of 4: a window over the epoch's end that
counts every step as ``batch x accumulation x length`` overstates the rate (the short step took less time
for far fewer tokens). Where the tokens come from, best first:

1. the trainer's ``total_tokens`` (``include_num_input_tokens_seen``): the tokens of the tensors fed, so a
   short step is counted as what it was. With ``true``/``"all"`` the count is ``input_ids.numel()``:
   padding included (each micro-batch is padded to its longest sample); with ``"non_padding"`` it is the
   attention mask's sum: real tokens only. The log does not say which: the run's config does.
2. the samples of each step (``EpochShape``, from the trainer's start-up banner in stdout or the config and
   the dataset size) x the mean real length of a sample (when the caller knows it: a fixed-length dataset,
   a tokenised count): real tokens, the short step counted by its samples.
3. every step a full batch x the length given: the old way, kept as ``naive`` beside the others.

Padding is counted apart when two of them meet: the trainer's padded count (1, ``"all"``) and the real
tokens from (2) give ``padding = padded - real``. Nothing here imports torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

COUNTS = ("all", "non_padding")  # include_num_input_tokens_seen's counting modes (true means "all")


def token_count_mode(value) -> str | None:
    """``include_num_input_tokens_seen`` of a config -> "all", "non_padding" or None (no count logged)."""
    if value is True or (isinstance(value, str) and value.strip().lower() in ("all", "true", "yes")):
        return "all"
    if isinstance(value, str) and value.strip().lower() == "non_padding":
        return "non_padding"
    return None


@dataclass(frozen=True)
class EpochShape:
    """How the Trainer cuts an epoch into optimizer steps (one rank's share; ``world`` ranks alike)."""

    examples: int  # training samples in an epoch (the banner's "Num examples": after the validation split)
    batch: int  # per device
    accumulation: int = 1
    world: int = 1
    drop_last: bool = False

    @property
    def full(self) -> int:
        """Samples of a full step, all ranks."""
        return self.batch * self.accumulation * self.world

    def _rank_examples(self) -> int:
        return math.ceil(self.examples / self.world)  # accelerate's even batches: every rank gets as many

    def _micro_batches(self) -> int:
        n = self._rank_examples()
        return n // self.batch if self.drop_last else math.ceil(n / self.batch)

    @property
    def steps_per_epoch(self) -> int:
        return max(1, math.ceil(self._micro_batches() / self.accumulation))

    def samples(self, step: int) -> int:
        """Samples (all ranks) of optimizer step ``step`` (1-based, counted from the run's start)."""
        spe = self.steps_per_epoch
        if (step - 1) % spe != spe - 1:
            return self.full
        n, mb = self._rank_examples(), self._micro_batches()
        last_mbs = mb - (spe - 1) * self.accumulation
        per_rank = min(last_mbs * self.batch, n - (spe - 1) * self.accumulation * self.batch)
        return max(0, per_rank) * self.world

    def samples_between(self, first: int, last: int) -> int:
        """Samples of the steps after ``first`` up to ``last`` (what a window from ``first``'s end holds)."""
        return sum(self.samples(s) for s in range(first + 1, last + 1))


_BANNER = {
    "examples": re.compile(r"\bNum examples = ([\d,]+)"),
    "batch": re.compile(r"\bInstantaneous batch size per device = ([\d,]+)"),
    "total": re.compile(r"\bTotal train batch size \(w\. parallel, distributed & accumulation\) = ([\d,]+)"),
    "accumulation": re.compile(r"\bGradient Accumulation steps = ([\d,]+)"),
    "steps_per_epoch": re.compile(r"\bNum update steps per epoch = ([\d,]+)"),
}


class BannerReader:
    """Reads the Trainer's start-up banner from stdout lines ("Num examples = 1,500", ...)."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def feed(self, line: str) -> None:
        if "=" not in line or len(self.values) == len(_BANNER):
            return
        for key, pattern in _BANNER.items():
            m = pattern.search(line)
            if m:
                self.values[key] = int(m.group(1).replace(",", ""))

    def shape(self, *, drop_last: bool = False) -> EpochShape | None:
        """The epoch's shape once the banner was read; None before (or when it does not add up)."""
        v = self.values
        if not all(k in v for k in ("examples", "batch", "total", "accumulation")) or not v["batch"] or \
                not v["accumulation"] or v["total"] % (v["batch"] * v["accumulation"]):
            return None
        shape = EpochShape(v["examples"], v["batch"], v["accumulation"], v["total"] // (v["batch"] * v["accumulation"]),
                           drop_last)
        if "steps_per_epoch" in v and v["steps_per_epoch"] != shape.steps_per_epoch:
            return None  # a trainer that cuts epochs another way: better no correction than a wrong one
        return shape


def read_banner(text: str, *, drop_last: bool = False) -> EpochShape | None:
    reader = BannerReader()
    for line in text.replace("\r", "\n").splitlines():
        reader.feed(line)
    return reader.shape(drop_last=drop_last)


def banner_of(log_path: Path, *, drop_last: bool = False, max_bytes: int = 8 << 20) -> EpochShape | None:
    """The epoch's shape from the start of a run's stdout log (the banner comes before the first step)."""
    try:
        with open(log_path, "rb") as fh:
            head = fh.read(max_bytes)
    except OSError:
        return None
    return read_banner(head.decode("utf-8", "replace"), drop_last=drop_last)


@dataclass(frozen=True)
class SteadyRate:
    """Tokens/s over a window of steps: the steps after ``first`` up to ``last``, in ``seconds``."""

    first: int
    last: int
    seconds: float
    tokens_per_s: float | None  # the headline: real tokens when known, else what the trainer counted
    real_tokens_per_s: float | None = None  # without padding
    padded_tokens_per_s: float | None = None  # with padding (the trainer's "all" count)
    naive_tokens_per_s: float | None = None  # every step counted as a full batch x the length given
    samples_per_s: float | None = None
    short_steps: tuple[int, ...] = ()  # steps of the window with fewer samples than a full batch
    counted: str = ""  # how the headline's tokens were counted, in words

    @property
    def steps_per_s(self) -> float:
        return (self.last - self.first) / self.seconds

    @property
    def padding_share(self) -> float | None:
        """Share of the padded tokens that are padding."""
        if self.real_tokens_per_s is None or not self.padded_tokens_per_s:
            return None
        return max(0.0, 1 - self.real_tokens_per_s / self.padded_tokens_per_s)

    def line(self) -> str:
        """"3,512 tok/s real (+4.1% padding) over steps 3-40 · 2 short steps counted as they are"."""
        if self.tokens_per_s is None:
            return f"{self.steps_per_s:.3g} steps/s over steps {self.first}-{self.last} (tokens unknown)"
        parts = [f"{self.tokens_per_s:,.0f} tok/s {self.counted}".rstrip()]
        if self.padding_share is not None:
            parts[0] += f" (+{self.padding_share / (1 - self.padding_share):.1%} padding)"
        parts.append(f"over steps {self.first}-{self.last}")
        if self.short_steps:
            parts.append(f"{len(self.short_steps)} short step(s) counted as they are")
        return " · ".join(parts)


def steady_rate(times: Mapping[int, float], first: int, last: int | None = None, *,
                total_tokens: Mapping[int, float] | None = None, token_count: str | None = "all",
                shape: EpochShape | None = None, sample_tokens: float | None = None,
                full_step_tokens: float | None = None) -> SteadyRate | None:
    """The rate of the steps after ``first`` up to ``last`` (default: the last step timed), timed from
    ``times`` (step -> seconds: arrival stamps or the trainer's elapsed time). ``total_tokens``: the trainer's
    cumulative count by step, counted as ``token_count`` says; ``shape``: the epoch's cut (short steps);
    ``sample_tokens``: a sample's mean real length; ``full_step_tokens``: a full step's tokens for the naive
    rate (default ``shape.full x sample_tokens``). None when the window is empty or untimed."""
    last = max(times) if last is None and times else last
    if last is None or first not in times or last not in times or last <= first:
        return None
    seconds = times[last] - times[first]
    if seconds <= 0:
        return None
    steps = last - first
    trainer = None
    if total_tokens is not None and isinstance(total_tokens.get(first), (int, float)) and \
            isinstance(total_tokens.get(last), (int, float)):
        trainer = float(total_tokens[last]) - float(total_tokens[first])
    samples = shape.samples_between(first, last) if shape else None
    from_samples = samples * sample_tokens if samples is not None and sample_tokens else None
    full = full_step_tokens if full_step_tokens else (shape.full * sample_tokens if shape and sample_tokens else None)
    real = padded = None
    if trainer is not None and token_count == "non_padding":
        real, counted = trainer, "real (trainer's non-padding count)"
    elif trainer is not None:
        padded, real = trainer, from_samples
        counted = "real (samples x mean length)" if real is not None else "incl. padding (trainer's count)"
    elif from_samples is not None:
        real, counted = from_samples, "real (samples x mean length)"
    elif full is not None:
        counted = "(every step a full batch)"
    else:
        counted = ""
    headline = real if real is not None else padded if padded is not None else (steps * full if full else None)
    short = tuple(s for s in range(first + 1, last + 1) if shape.samples(s) < shape.full) if shape else ()
    return SteadyRate(first, last, seconds, headline / seconds if headline is not None else None,
                      real / seconds if real is not None else None, padded / seconds if padded is not None else None,
                      steps * full / seconds if full else None, samples / seconds if samples is not None else None,
                      short, counted)


def _key(rate: SteadyRate) -> float:
    return rate.tokens_per_s if rate.tokens_per_s is not None else \
        rate.samples_per_s if rate.samples_per_s is not None else rate.steps_per_s


def steady_of_records(points, *, skip: int = 3, min_span_s: float = 4.0, token_count: str | None = "all",
                      shape: EpochShape | None = None, sample_tokens: float | None = None) -> SteadyRate | None:
    """The Run view's steady rate: ``steady_rate`` over windows of at least ``min_span_s`` of the trainer's clock
    (``elapsed_time`` has 1 s resolution), one window after the other from the latest attempt's first record,
    those ending at record ``skip`` or later, and the median window (a pause for eval or a checkpoint inside one
    window does not move it; the windows are ``alarms.rate_points``'). ``points``: records with ``step``,
    ``elapsed_s`` and ``total_tokens`` (``history.TrainerPoint``), in order."""
    timed = [p for p in points if p.elapsed_s is not None]
    start = max((i for i in range(1, len(timed)) if timed[i].elapsed_s < timed[i - 1].elapsed_s), default=0)
    seg = timed[start:]  # a resume restarts the trainer's clock: only the latest attempt's records
    rates: list[SteadyRate] = []
    i = 0
    for j in range(1, len(seg)):
        a, b = seg[i], seg[j]
        if b.elapsed_s - a.elapsed_s < min_span_s or b.step <= a.step:
            continue
        i = j
        if j < skip:
            continue
        tokens = {a.step: a.total_tokens, b.step: b.total_tokens} \
            if a.total_tokens is not None and b.total_tokens is not None else None
        rate = steady_rate({a.step: a.elapsed_s, b.step: b.elapsed_s}, a.step, b.step, total_tokens=tokens,
                           token_count=token_count, shape=shape, sample_tokens=sample_tokens)
        if rate is not None:
            rates.append(rate)
    if not rates:
        return None
    return sorted(rates, key=_key)[len(rates) // 2]
