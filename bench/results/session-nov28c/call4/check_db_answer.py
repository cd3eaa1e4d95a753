"""Normal-mode finds of shipped problems that the swap solvers apply to (ResNet-50, U-Net and VGG-16 narrow layers, N=32
FP16 NHWC, F and B), empty user DB: each must be answered by the shipped DB with nothing measured (the shipped DB holds
no record of the swap solvers: they were added after it was built), and a problem the shipped DB lacks must be measured
with the swap solver among the candidates."""
import sys

from miofind import find_solutions
from miofind.models import model_problems

bad = 0
for m in ("resnet50", "unet", "vgg16"):
    for p in model_problems(m, batch=32, dtypes=("FP16",), layouts=("NHWC",), directions="FB"):
        from miofind.find import candidates
        if not any("Swap" in s.id for s in candidates(p, None)[0]):
            continue
        r = find_solutions(p, mode="normal", store=False)
        ok = r.source == "db" and r.db_layer == "system"
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {m} {p.key()} source={r.source} layer={r.db_layer} best={r[0].solver_id}")
from miofind.problem import ProblemDescription
p = ProblemDescription.make("F", n=24, c=64, k=64, in_size=(200, 200), filter_size=3, pads=1, layout="NHWC", dtype="FP16")
r = find_solutions(p, mode="normal", store=False)
print("unshipped:", r.source, [(s.solver_id, round(s.time_ms, 4)) for s in r][:4])
bad += r.source != "find" or not any(s.solver_id == "ConvImplicitGemmHopperFwdSwap" for s in r)
sys.exit(1 if bad else 0)
