#!/usr/bin/env bash
# Issue 34's GPU measurements (see benchmarks/knobs_gpu.py). From the repository root
# on the GPU box with .whl/ carried (bash ../shared/gpu-box/download-wheels.sh .whl, plus ruamel.yaml, platformdirs).
set -u
export OUT="${OUT:-/tmp/kn-out}"
source "$(dirname "$0")/gpu_box_env.sh" || exit 1
exec python3 benchmarks/knobs_gpu.py "$@"
