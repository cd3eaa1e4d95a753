#!/usr/bin/env bash
# Session nov30k, call 2 (any sm_90; an H200): fused plans get C++ plans (013da39c: the bias as the Hopper fused
# forward's fifth pointer role, FastConv's bias input and gradient, armed modules with a fused bias). (1) GPU tests:
# tests/torch/test_fast.py (the new fused test) and test_torch_gpu.py but the two whole-network tests; (2) ConvNeXt-T
# AMP batch-8 training (its three downsampling layers fuse their bias), --profile; (3) the same step captured whole in
# one CUDA graph (bench_graph_step.py), on the same user DB; (4) wav2vec2_base AMP batch 8 captured likewise. Call 1
# failed: a C++ autograd Function cannot take an undefined tensor as an input (the bias of a plan without a fused
# one); a fused plan's node is its own Function now (FastConvBias), and the extension's forward takes the bias.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_KERNEL_CACHE=/tmp/kc2
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  -k "not resnet50 and not resnext101" > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt; grep -E "^(FAILED|ERROR)" $R/tests.txt | head; save
export MIOFIND_DB=sqlite:////tmp/r/u_convnext.sqlite
timeout 170 python3 bench/bench_models.py --out $R/convnext_tiny_train8-amp --models convnext_tiny \
  --configs train8-amp --iters 10 --rounds 5 --warmup 3 --steps 3 --profile --skip-first \
  > $R/convnext_tiny_train8-amp.log 2>&1
echo "bench rc=$? $(el) s"; grep -E "^\| convnext" $R/convnext_tiny_train8-amp/bench_models.md; save
timeout 170 python3 bench/bench_graph_step.py --out $R/graph_convnext --models convnext_tiny --configs train8-amp \
  --iters 20 --rounds 5 > $R/graph_convnext.log 2>&1
echo "graph rc=$? $(el) s"; tail -5 $R/graph_convnext.log; save
export MIOFIND_DB=sqlite:////tmp/r/u_wav2vec2.sqlite
timeout 170 python3 bench/bench_graph_step.py --out $R/graph_wav2vec2 --models wav2vec2_base --configs train8-amp \
  --iters 20 --rounds 5 > $R/graph_wav2vec2.log 2>&1
echo "graph rc=$? $(el) s"; tail -3 $R/graph_wav2vec2.log; save
echo "all $(el) s"
