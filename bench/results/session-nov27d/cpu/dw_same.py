# Run from the repository root after `git show 8a02c4f:solvers/depthwise_base.py > solvers/_dw_old_tmp.py` (the ranking
# before 8261875); delete that file afterwards. dw_ab.py: old against new ranking time; dw_same.py: the same rankings.
import sys, sqlite3, importlib, random
sys.path.insert(0,'.')
from miofind.problem import ProblemDescription
new = importlib.import_module("miofind.solvers.depthwise_base")
old = importlib.import_module("miofind.solvers._dw_old_tmp")
con = sqlite3.connect("finddb/sm_90-132.sqlite")
tabs=[r[0] for r in con.execute("select name from sqlite_master where type='table'")]
print(tabs)
keys = [r[0] for r in con.execute("select distinct problem_key from find_records where solver_id like 'ConvDepthwise%' or solver_id like 'ConvGrouped%'")]
print(len(keys), "problems")
n=0; bad=0
for k in keys:
    p = ProblemDescription.from_key(k).as_conv()
    a = old.ranked_configs(old.make_pass(p)); b = new.ranked_configs(new.make_pass(p))
    n+=1
    if a != b:
        bad+=1; print("DIFF", k)
print(n, "compared,", bad, "differ")
