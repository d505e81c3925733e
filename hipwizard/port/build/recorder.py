"""The compile-command recorder ``check --build`` puts in front of hipcc (standard library only, run by path).

``python recorder.py LOG REAL ARCH ARGS...``: runs ``REAL ARGS...`` (``REAL`` = ``--launch``: ``ARGS`` is the whole
command, as a CMake compiler launcher gets it) with every ``--offload-arch``/``--amdgpu-target`` set to ``ARCH``,
passes its output through, and appends one JSON line ``{"cwd", "argv", "rc", "output"}`` to ``LOG`` (locked, so a
parallel build's lines do not mix). Exits with the compiler's status.
"""

import fcntl
import json
import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    log, real, arch, args = argv[0], argv[1], argv[2], argv[3:]
    cmd = list(args) if real == "--launch" else [real, *args]
    fixed, seen = [cmd[0]], False
    for a in cmd[1:]:
        if a.startswith(("--offload-arch=", "--amdgpu-target=")):
            if not seen:
                fixed.append(f"--offload-arch={arch}")
            seen = True
            continue
        fixed.append(a)
    if not seen and any(a.endswith((".cu", ".hip", ".cpp", ".cc", ".cxx")) for a in fixed[1:]):
        fixed.append(f"--offload-arch={arch}")  # hipcc's own default is no AMD GPU of the user's
    run = subprocess.run(fixed, capture_output=True, text=True, check=False)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    with open(log, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps({"cwd": os.getcwd(), "argv": fixed, "rc": run.returncode,
                            "output": (run.stdout + run.stderr)[-20000:]}) + "\n")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
