#!/usr/bin/env bash
# hipwizard's one entry for people and CI:
#   ./run.sh demo    set everything up, then open the wizard on its embedded demo
#   ./run.sh test    set everything up, then run the whole test suite (./run.sh test fast: no slow tests)
#   ./run.sh setup   only set up (.venv with hipwizard[train,dev])
# On a machine where `python3 -c "import torch"` already works (a ROCm or CUDA build), the venv sees that
# torch (--system-site-packages) and the install is constrained to it, so it is kept.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${HIPWIZARD_VENV:-.venv}"
PY="${PYTHON:-python3}"

say() { printf '\033[1m[hipwizard]\033[0m %s\n' "$*" >&2; }

apt_install() {
    command -v apt-get >/dev/null 2>&1 || return 0
    local sudo=""
    [ "$(id -u)" = 0 ] || { command -v sudo >/dev/null 2>&1 && sudo="sudo -n"; } || return 0
    $sudo apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 \
        || { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1; } \
        || say "could not apt-get install $* (continuing without)"
}

setup() {
    if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        say "Python 3.11 or newer is needed (found: $("$PY" --version 2>&1))"; exit 2
    fi
    "$PY" -c 'import venv, ensurepip' 2>/dev/null || apt_install python3-venv
    local stamp="$VENV/.hipwizard-setup" want
    want="$(cat pyproject.toml run.sh | sha256sum | cut -c1-16)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi

    local system_torch=""
    system_torch="$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)"
    if [ ! -x "$VENV/bin/python" ]; then
        if [ -n "$system_torch" ]; then
            say "keeping the installed torch $system_torch (venv with system site packages)"
            "$PY" -m venv --system-site-packages "$VENV"
        else
            "$PY" -m venv "$VENV"
        fi
    fi
    local pip=("$VENV/bin/python" -m pip -q --disable-pip-version-check)
    "${pip[@]}" install --upgrade pip setuptools wheel
    local constraints="$VENV/constraints.txt"
    local have_torch
    have_torch="$("$VENV/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)"
    if [ -n "$have_torch" ]; then
        echo "torch==$have_torch" > "$constraints"
    else
        say "installing PyTorch (CPU is enough for the demo and the tests; a few minutes)"
        "${pip[@]}" install torch==2.14.1 torchvision==0.29.1 torchaudio==2.11.1
        echo "torch==2.14.1" > "$constraints"
    fi
    if ! "$VENV/bin/python" -c 'import deepspeed' 2>/dev/null; then
        say "installing DeepSpeed (ops JIT-built on first use)"
        DS_BUILD_OPS=0 "${pip[@]}" install --no-build-isolation -c "$constraints" "deepspeed==0.18.4"
    fi
    say "installing hipwizard[train,dev]"
    "${pip[@]}" install -c "$constraints" -e ".[train,dev,nvidia]"
    # torchao for the one real FP8 run of the tests (tests/train/test_fp8.py puts it on that run's PYTHONPATH only):
    # installed in the venv, peft would import it into every run.
    if [ ! -d "$VENV/extras/torchao/torchao" ]; then
        "${pip[@]}" install --no-deps --target "$VENV/extras/torchao" "torchao==0.17.0"
    fi
    echo "$want" > "$stamp"
}

case "${1:-demo}" in
    setup) setup ;;
    demo)
        setup
        shift || true
        exec "$VENV/bin/hipwizard" --demo "$@"
        ;;
    test)
        apt_install hipcc rocminfo rocm-smi
        # Headless Chromium + its matching ChromeDriver for tests/test_web.py (the --web app in a real browser).
        command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 \
            || apt_install chromium chromium-driver
        setup
        shift || true
        # Habits before the tests, in both lanes (docs/architecture.md): lint and types, each fails the run.
        "$VENV/bin/ruff" check hipwizard tests benchmarks || { say "ruff check failed (see above)"; exit 1; }
        "$VENV/bin/mypy" || { say "mypy failed (see above)"; exit 1; }
        if [ "${1:-}" = fast ]; then
            # The fast lane: everything not marked slow (no real trainer, no torch worker, no full TUI
            # session, no real browser); under 4 minutes on 2 cores (docs/benchmarks.md). Not what CI runs.
            shift
            exec "$VENV/bin/python" -m pytest -q -m "not slow" "$@"
        fi
        # The whole suite, the slow real-trainer runs included (ZeRO-3 on CPU, two ranks, two nodes):
        # about 13 minutes on 2 cores. HIPWIZARD_ZERO3=0 / HIPWIZARD_MULTIPROC=0 skip them locally.
        export HIPWIZARD_ZERO3="${HIPWIZARD_ZERO3:-1}" HIPWIZARD_MULTIPROC="${HIPWIZARD_MULTIPROC:-1}"
        exec "$VENV/bin/python" -m pytest -q "$@"
        ;;
    *) say "usage: ./run.sh [demo|test|setup]"; exit 2 ;;
esac
