#!/usr/bin/env bash
# Session stem, call 8 (issues 17 and 18): what the small-C solvers cost a model's first AMP training step at a batch the
# shipped DB does not hold (bench/find_breakdown.py --amp --batch 48 --steady 10: ResNet-50, empty user DB, a kernel
# cache with only the C++ extension): "before" = this tree without the two registry rows and with the DB before their
# records (.pin/db_before_stem.sqlite, carried), "after" = this tree; a discarded warm-up process first, then before,
# after, before, after.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
B=/tmp/before; mkdir -p $B; cp -r miofind solvers kernels_src finddb bench scripts tests pyproject.toml $B/
cp .pin/db_before_stem.sqlite $B/finddb/sm_90-132.sqlite
grep -v "ConvImplicitGemmSmallC" miofind/registry.py > $B/miofind/registry.py
MIOFIND_KERNEL_CACHE=/tmp/kc-base PYTHONPATH=$PWD:/tmp/site python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
save() { tar czf $OUT/r.tgz -C $OUT r; }
for side in warm before after before after; do i=$((${i:-0} + 1))
  dir=$PWD; [ $side = before ] && dir=$B
  rm -rf /tmp/kc-$i; cp -r /tmp/kc-base /tmp/kc-$i
  left=$(( 570 - ($(date +%s) - T0) )); [ $left -lt 40 ] && break
  (cd $dir && MIOFIND_KERNEL_CACHE=/tmp/kc-$i PYTHONPATH=$dir:/tmp/site timeout $(( left < 130 ? left : 130 )) python3 bench/find_breakdown.py \
    --out $R/fb-$i-$side --amp --batch 48 --steady 10) > $R/fb-$i-$side.log 2>&1
  echo "$i $side rc=$? $(( $(date +%s) - T0 )) s: $(python3 -c "
import json; s = json.load(open('$R/fb-$i-$side/find_breakdown.json'))['summary']
print({k: round(s[k], 3) for k in ('step_s', 'find_wall_ms', 'second_step_s', 'background_wait_s', 'steady_ms')})" 2>&1 | tail -1)"
  save
done
