#!/usr/bin/env bash
# Issue 34's GPU measurements (see benchmarks/knobs_gpu.py). From the repository root
# on the GPU box with .whl/ carried (bash ../shared/gpu-box/download-wheels.sh .whl, plus ruamel.yaml, platformdirs).
set -u
OUT="${OUT:-/tmp/kn-out}"
if [ ! -f /tmp/site/.ready ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
    (cd /tmp && tar xzf "$OLDPWD/.whl/deepspeed-0.18.4.tar.gz" && cd deepspeed-0.18.4 \
        && DS_BUILD_OPS=0 python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/site .) || exit 1
    touch /tmp/site/.ready
fi
export PYTHONPATH="/tmp/site:$PWD" PATH="/tmp/site/bin:$PATH" PYTHONUNBUFFERED=1
export DISABLE_VERSION_CHECK=1 HF_HUB_OFFLINE=1 NCCL_NVLS_ENABLE=0 TOKENIZERS_PARALLELISM=false
exec python3 benchmarks/knobs_gpu.py "$@"
