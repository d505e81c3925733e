"""Stands in for ``llamafactory-cli train``: replays a recorded real run's logs at speed.

Usage: python replay_run.py TRAINER_LOG STDOUT_LOG DELAY_S EXIT_CODE [HOLD_S]
Writes output/trainer_log.jsonl record by record, and the stdout log in as many slices, sleeping DELAY_S
between records; then holds HOLD_S seconds (a run that keeps going) and exits with EXIT_CODE.
"""

import sys
import time
from pathlib import Path

trainer, stdout, delay, code = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
hold = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
records = trainer.read_text().splitlines(keepends=True) if trainer.name != "-" else []
lines = stdout.read_text().splitlines(keepends=True)
out = Path("output")
out.mkdir(exist_ok=True)
slices = max(1, len(records))
per = len(lines) // slices + 1
with open(out / "trainer_log.jsonl", "w") as log:
    for i in range(slices):
        sys.stdout.write("".join(lines[i * per:(i + 1) * per]))
        sys.stdout.flush()
        if i < len(records):
            log.write(records[i])
            log.flush()
        time.sleep(delay)
sys.stdout.write("".join(lines[slices * per:]))
sys.stdout.flush()
time.sleep(hold)
sys.exit(code)
