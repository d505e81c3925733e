#!/usr/bin/env bash
# Sourced by the GPU-box scripts (calibrate_gpu.sh, gpu_tour.sh, knobs_gpu.sh): the carried wheels installed once
# per machine into /tmp/site (DeepSpeed built from its sdist with no ops), then the environment LLaMA-Factory needs
# there. From the repository root, with .whl/ carried (bash ../shared/gpu-box/download-wheels.sh .whl, plus
# ruamel.yaml and platformdirs). Returns 1 when the install fails.
if [ ! -f /tmp/site/.ready ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || return 1
    (cd /tmp && tar xzf "$OLDPWD/.whl/deepspeed-0.18.4.tar.gz" && cd deepspeed-0.18.4 \
        && DS_BUILD_OPS=0 python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/site .) || return 1
    touch /tmp/site/.ready
fi
export PYTHONPATH="/tmp/site:$PWD" PATH="/tmp/site/bin:$PATH" PYTHONUNBUFFERED=1
export DISABLE_VERSION_CHECK=1 HF_HUB_OFFLINE=1 NCCL_NVLS_ENABLE=0 TOKENIZERS_PARALLELISM=false
