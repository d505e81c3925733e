"""``--gpus``: one meaning in every Train command (``train plan``, ``train run``, ``train calibrate``).

A plain number is how many GPUs (``--gpus 4``); a comma list names the devices by id, as
``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` do (``--gpus 0,1,2,3``; one device: ``--gpus 3,``).
The count of a list is its length, so ``--gpus 4`` and ``--gpus 0,1,2,3`` plan the same run; a launch
with a count starts that many processes on the devices already visible, a launch with ids shows it
exactly those devices.
"""

from __future__ import annotations

from dataclasses import dataclass

from hipwizard.errors import UserError

GPUS_HELP = ("how many GPUs (4) or which device ids (0,1,2,3 as in CUDA_VISIBLE_DEVICES; "
             "one device by id: 3,)")
MAX_GPUS = 4096


@dataclass(frozen=True)
class GpuChoice:
    """``count`` GPUs; ``ids`` the devices named, None when only a count was given."""

    count: int
    ids: tuple[int, ...] | None = None


def parse_gpus(text: str | None) -> GpuChoice | None:
    """``--gpus`` as given: None when absent; ``UserError`` (one line, the form shown) when unreadable."""
    if text is None:
        return None
    value = str(text).strip()
    bad = f"--gpus takes {GPUS_HELP}, not {text!r}"
    if "," not in value:
        if not value.isdigit():
            raise UserError(bad)
        count = int(value)
        if not 1 <= count <= MAX_GPUS:
            raise UserError(f"--gpus {value}: a number of GPUs is between 1 and {MAX_GPUS} "
                            f"(device ids are a comma list: --gpus 0,1; one device: --gpus {value},)")
        return GpuChoice(count)
    parts = [p.strip() for p in value.split(",")]
    if parts and parts[-1] == "":
        parts.pop()  # "3," is device 3
    if not parts or not all(p.isdigit() for p in parts):
        raise UserError(bad)
    ids = tuple(int(p) for p in parts)
    if len(set(ids)) != len(ids):
        raise UserError(f"--gpus {value} names a device twice")
    if len(ids) > MAX_GPUS:
        raise UserError(f"--gpus names more than {MAX_GPUS} devices")
    return GpuChoice(len(ids), ids)
