#!/usr/bin/env bash
# Session nov28c, call 4: (1) normal-mode finds of the shipped problems the swap solvers apply to, answered by the shipped
# DB with nothing measured (the find rule: the system DB vouches for the solvers it holds records of), and an unshipped
# problem measured with them; (2) the swap tests, the family's claims, miofind.torch's GPU tests (the C++ path's
# tensor-map cases with the swap solvers, ResNet-50 against cuDNN, a second process with zero benchmarks).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
MIOFIND_DB=sqlite:////tmp/empty.sqlite timeout 150 python3 bench/results/session-nov28c/call4/check_db_answer.py > $R/db_answer.txt 2>&1
echo "db answer rc=$? $(el) s"; grep -c "^ok" $R/db_answer.txt; grep -E "^BAD|unshipped|Error" $R/db_answer.txt | cut -c1-250; save
timeout 200 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_swap.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py::test_hopper_solver tests/torch/test_fast.py > $R/tests_swap.log 2>&1
echo "swap + fast tests rc=$? $(el) s: $(tail -n 1 $R/tests_swap.log)"; grep -E "^(FAILED|ERROR)" $R/tests_swap.log | cut -c1-300 | head -20; save
timeout 300 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider -p no:benchmark tests/torch/test_torch_gpu.py > $R/tests_torch.log 2>&1
echo "torch tests rc=$? $(el) s: $(tail -n 1 $R/tests_torch.log)"; grep -E "^(FAILED|ERROR)" $R/tests_torch.log | cut -c1-300 | head -20
save
