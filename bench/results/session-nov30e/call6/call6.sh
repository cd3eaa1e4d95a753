#!/usr/bin/env bash
# Session nov30e, call 6 (any sm_90): the FFT GPU tests again after call 5's test fix (the prefetch test three times);
# then every cuBLASLt config of GemmWrw1x1_stride1's space (the heuristic's 8 places; its first 3 with each split and
# reduction) on ResNet-50's 1x1 stride-1 W layers, FP16 NHWC, N = 32, beside cuDNN's plans and the Hopper W solver's
# find configs, two interleaved passes (bench/sweep_configs.py).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc6 MIOFIND_DB=sqlite:////tmp/u6.sqlite CUPY_CACHE_DIR=/tmp/cupy6 MIOFIND_SYSTEM_DB=none
timeout 200 python3 -m pytest -m gpu tests/fft/test_fft_gpu.py -v -p no:cacheprovider -rfEs -n 8 > $R/fft.log 2>&1
echo "fft rc=$? $(el) s"; tail -1 $R/fft.log; grep -E "^(FAILED|ERROR)" $R/fft.log | head
timeout 100 python3 -m pytest -m gpu tests/fft/test_fft_gpu.py -k prefetched --count 3 -p no:cacheprovider -q > $R/fft_prefetch3.log 2>&1 \
  || timeout 100 bash -c 'for i in 1 2 3; do python3 -m pytest -m gpu tests/fft/test_fft_gpu.py -k prefetched -p no:cacheprovider -q; done' > $R/fft_prefetch3.log 2>&1
echo "prefetch x3 rc=$? $(el) s"; grep -E "passed|failed" $R/fft_prefetch3.log | tail -3
L=r50_64to256_56_1x1s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_128to512_28_1x1s1,r50_512to128_28_1x1s1,r50_512to256_28_1x1s1,r50_256to1024_14_1x1s1,r50_1024to256_14_1x1s1,r50_1024to512_14_1x1s1,r50_512to2048_7_1x1s1,r50_2048to512_7_1x1s1
timeout 280 python3 bench/sweep_configs.py --dir W --solver GemmWrw1x1_stride1 --set resnet50 --layers $L --iters 30 \
  --reps 2 --deadline 260 --others ConvImplicitGemmHopperWrw --json $R/sweep_lt.json > $R/sweep_lt.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_lt.txt
gzip -f $R/*.json $R/fft.log; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
