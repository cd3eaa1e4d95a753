cd /work/main/bench
export PYTHONPATH=/work/main:/work/main/bench
for v in base extra; do
  case $v in base) A="";; extra) A="--param extra_trees=true";; esac
  echo "== $v $A $(date +%T)"; python costmodel_nested.py --default-configs --seed 1 --out /tmp/nov27_nested_$v.pkl $A
  python costmodel_stack.py /tmp/nov27_nested_$v.pkl --out /tmp/nov27_stack_$v > /tmp/nov27_stack_$v.log 2>&1
  echo "done $v $(date +%T)"
done
