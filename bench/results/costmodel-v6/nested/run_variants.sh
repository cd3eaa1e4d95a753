cd /work/wt/cm6/bench
PY="/work/main/.venv/bin/python"
export PYTHONPATH=/work/wt/cm6:/work/wt/cm6/bench
for v in base xendcg defcfg relative graded; do
  case $v in
    base) A="";; xendcg) A="--rank-param objective=rank_xendcg";; defcfg) A="--default-configs";;
    relative) A="--relative";; graded) A="--rank-labels graded";;
  esac
  echo "== $v $A"; $PY costmodel_nested.py --out /tmp/cm6_n2_$v.pkl $A
done
