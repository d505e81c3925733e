#!/usr/bin/env bash
# The GPU tour in one device call (issue 8). From the repository root on the GPU box, with .whl/ carried
# (bash shared/gpu-box/download-wheels.sh .whl, plus ruamel.yaml and platformdirs) and .gpu/parity built
# here by `python benchmarks/gpu_tour/make_assets.py parity --out .gpu/parity`:
#   bash benchmarks/gpu_tour.sh [--phases doctor,parity,ab,memory] [other gpu_tour.py options]
set -u
export OUT="${OUT:-/tmp/tour-out}"
WORK="${WORK:-/tmp/tour}"
source "$(dirname "$0")/gpu_box_env.sh" || exit 1
exec python3 benchmarks/gpu_tour.py --work "$WORK" --out "$OUT" "$@"
