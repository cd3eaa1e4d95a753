# The nested criterion at LightGBM seeds 2 and 3, both variants (as run_nested.sh, seed 1).
cd /work/main/bench
export PYTHONPATH=/work/main:/work/main/bench PATH=/tmp/venv/bin:$PATH
for seed in 2 3; do for v in base align; do
  case $v in base) A="";; align) A="--align-features";; esac
  echo "== $v seed $seed $(date +%T)"
  python costmodel_nested.py --default-configs --param extra_trees=true --seed $seed --out /tmp/nov27b_nested_${v}_s$seed.pkl $A
done; done
echo "done $(date +%T)"
