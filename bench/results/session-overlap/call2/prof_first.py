"""cProfile of the first find (a miss, empty user DB) in a fresh process, after CUDA is up."""
import cProfile, os, pstats, sys, tempfile, time
tmp = tempfile.mkdtemp()
os.environ["MIOFIND_DB"] = f"sqlite:///{tmp}/u.sqlite"
import cupy
cupy.cuda.Device(0).synchronize()
t0 = time.perf_counter()
pr = cProfile.Profile(); pr.enable()
from miofind import find_solutions
from miofind.problem import ProblemDescription
p = ProblemDescription.make("F", n=48, c=3, k=64, in_size=(224, 224), filter_size=7, pads=3, strides=2)
r = find_solutions(p)
pr.disable()
print("first miss find incl. import: %.0f ms" % ((time.perf_counter() - t0) * 1e3), r.timing and {k: round(v) for k, v in r.timing.items() if isinstance(v, (int, float))})
pstats.Stats(pr, stream=sys.stdout).sort_stats("cumulative").print_stats(45)
