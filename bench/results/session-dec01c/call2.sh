#!/usr/bin/env bash
# Session dec01c, call 2: the torch GPU tests after the two changes of this session. test_fast.py whole, in one process
# (its ext fixture's own load of the build registers the ops first: the order that failed call 1's three tests);
# then every gpu-marked test of tests/torch/ in 4 workers, with the new
# test_graph_trees_leave_the_other_graphs_on_the_cpp_path (the op table stays on once CUDA-graph trees ran).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd MIOFIND_DB=sqlite:////tmp/r/u.sqlite
timeout 280 python3 -m pytest -q -p no:cacheprovider -n 0 tests/torch/test_fast.py > $R/test_fast.log 2>&1
echo "test_fast rc=$? $(el) s"; tail -2 $R/test_fast.log; grep -E "^(FAILED|ERROR)" $R/test_fast.log | head; save
timeout 300 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/torch/test_torch.py tests/torch/test_torch_gpu.py \
  > $R/torch_gpu.log 2>&1
echo "torch gpu rc=$? $(el) s"; tail -2 $R/torch_gpu.log; grep -E "^(FAILED|ERROR)" $R/torch_gpu.log | head; save
gzip -f $R/*.log; save
echo "all $(el) s"
