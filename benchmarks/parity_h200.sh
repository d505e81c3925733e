#!/usr/bin/env bash
# Issue 17's proof and cost runs on the H200, in one device call. From the repository root, carrying .whl
# (pydantic, ruamel.yaml, platformdirs: the image lacks them) and build/parity/model (built here by
# `python benchmarks/gpu_tour/make_assets.py parity --out build/parity`: the same files on both machines):
#   bash benchmarks/parity_h200.sh      -> $OUT/results.json, bench.txt (the captures stay in /tmp/pr there)
#   PHASES=cost,cross bash benchmarks/parity_h200.sh   -> only the cost benchmark (bench.txt) and the captures for
#       the cross-machine fp32 triangle (fp64 and fp32, batch 2 x seq 64, split in 15 MB parts: $OUT/x-*.part*;
#       `cat` them back together here)
set -u
PHASES="${PHASES:-proof,cost}"
OUT="${OUT:-/tmp/parity-out}"; mkdir -p "$OUT" /tmp/pr
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/pydantic-*.whl \
    .whl/pydantic_core-*.whl .whl/annotated_types-*.whl .whl/typing_inspection-*.whl .whl/ruamel_yaml-*.whl \
    .whl/platformdirs-*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TRANSFORMERS_VERBOSITY=error
M=build/parity/model
P="python3 -m hipwizard parity"
R=(--batch 2 --seq 128)
run() { local name=$1; shift; local t0=$(date +%s%N); timeout 240 "$@" >/tmp/pr/$name.json 2>/tmp/pr/$name.err
        local rc=$?; echo "$rc $(( ($(date +%s%N) - t0) / 1000000 ))e-3" >/tmp/pr/$name.rc
        echo "== $name: $(cat /tmp/pr/$name.rc)"; tail -2 /tmp/pr/$name.err; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
if [[ ,$PHASES, == *,cross,* ]]; then
    for d in fp64 fp32; do
        run cross-$d $P capture --model $M --dtype $d --device cuda --batch 2 --seq 64 --backward --out /tmp/pr/x-$d.safetensors --json
        split -b 15M -d /tmp/pr/x-$d.safetensors "$OUT/x-$d.part"
    done
    sha256sum /tmp/pr/x-*.safetensors
fi
if [[ ,$PHASES, == *,cost,* ]]; then
    # the default (∂out/∂in as count sketches), every element of ∂out/∂in (--grad-sketch 0), the small model
    { for run in "medium 8192" "medium 0" "small 8192"; do
        set -- $run
        timeout 200 python3 benchmarks/parity.py --device cuda --size $1 --dtype bf16 --repeat 5 --backward \
            --grad-sketch $2 2>&1 | grep -v -i "warn\|shards"
      done; } > "$OUT/bench.txt"
    cat "$OUT/bench.txt"
fi
[[ ,$PHASES, == *,proof,* ]] || exit 0
for d in fp64 fp32 bf16; do
    run capture-$d $P capture --model $M --dtype $d --device cuda "${R[@]}" --backward --out "/tmp/pr/h200-$d.safetensors" --json
done
REF="/tmp/pr/h200-fp64.safetensors"
for d in bf16 fp32; do
    T=(--model $M --device cuda --dtype $d --reference-run "/tmp/pr/h200-$d.safetensors" --no-save --json)
    run ok-$d $P compare "$REF" "${T[@]}"
    run bwdbug-$d $P compare "$REF" "${T[@]}" --perturb-grad model.layers.2.mlp=0.05
    run fwdbug-$d $P compare "$REF" "${T[@]}" --perturb model.layers.1.self_attn=0.05
done
run matrix-bf16 $P compare "$REF" --model $M --device cuda --dtype bf16 --reference-run "/tmp/pr/h200-bf16.safetensors" \
    --attn eager,sdpa,sdpa-flash,sdpa-efficient,sdpa-math,sdpa-cudnn,fa2,flex --no-save --json
run matrix-fp32 $P compare "$REF" --model $M --device cuda --dtype fp32 --reference-run "/tmp/pr/h200-fp32.safetensors" \
    --attn eager,sdpa,sdpa-efficient,sdpa-math,fa2 --no-save --json
python3 - "$OUT/results.json" <<'PY'
import json, pathlib, sys
out = {}
for rc in sorted(pathlib.Path("/tmp/pr").glob("*.rc")):
    code, secs = rc.read_text().split()
    body = rc.with_suffix(".json").read_text()
    try:
        body = json.loads(body)
    except ValueError:
        pass
    out[rc.stem] = {"exit": int(code), "wall_s": float(secs), "stdout": body,
                    "stderr": rc.with_suffix(".err").read_text()[-1500:]}
pathlib.Path(sys.argv[1]).write_text(json.dumps(out))
PY
