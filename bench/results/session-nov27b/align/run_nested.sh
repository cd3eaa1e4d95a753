# Nested leave-one-preset-out of the alignment features (CPU, seed 1, as shipped: default configs, extra_trees),
# base = the shipped recipe; each variant's pickle in /tmp, then costmodel_stack.py's criterion.
cd /work/main/bench
export PYTHONPATH=/work/main:/work/main/bench PATH=/tmp/venv/bin:$PATH
for v in base align; do
  case $v in base) A="";; align) A="--align-features";; esac
  echo "== $v $A $(date +%T)"
  python costmodel_nested.py --default-configs --param extra_trees=true --seed 1 --out /tmp/nov27b_nested_$v.pkl $A
  python costmodel_stack.py /tmp/nov27b_nested_$v.pkl --out /tmp/nov27b_stack_$v > /tmp/nov27b_stack_$v.log 2>&1
  echo "done $v $(date +%T)"
done
