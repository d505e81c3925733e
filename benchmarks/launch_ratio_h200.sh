#!/usr/bin/env bash
# hipwizard-launched vs bare llamafactory-cli on the advisor's pick for a small model, one short device call
# (see benchmarks/launch_ratio_h200.py). From the repository root on the GPU box with .whl/ carried.
set -u
export OUT="${OUT:-/tmp/ratio-out}"
t=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
echo "wheels installed in $((SECONDS - t)) s"
export PYTHONPATH="/tmp/site:$PWD" PATH="/tmp/site/bin:$PATH" PYTHONUNBUFFERED=1
export DISABLE_VERSION_CHECK=1 HF_HUB_OFFLINE=1 NCCL_NVLS_ENABLE=0 TOKENIZERS_PARALLELISM=false
exec python3 benchmarks/launch_ratio_h200.py "$@"
