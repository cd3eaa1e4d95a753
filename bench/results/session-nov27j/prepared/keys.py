"""Prepared (session nov27j, not run on a GPU): the problem keys of the shipped DB's other FP16/BF16 NHWC N=32 preset
groups (Inception-v3, MobileNetV2, VGG-16, ResNet-101, U-Net; ResNet-50's were tuned this session) that the shipped DB
holds and a GEMM solver applies to, for call_next.sh's re-measure after its GEMM tune.
python3 keys.py > other_keys.json"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))

from miofind.models import model_problems  # noqa: E402
from miofind.registry import solvers  # noqa: E402

MODELS = ("inception_v3", "mobilenet_v2", "vgg16", "resnet101", "unet")
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
db = sqlite3.connect(f"file:{os.path.join(root, 'finddb', 'sm_90-132.sqlite')}?mode=ro", uri=True)
held = {k for (k,) in db.execute("select distinct problem_key from find_records")}
r50 = set(json.load(open(os.path.join(root, "bench", "results", "session-cw", "call6", "r50_keys.json"))))
gemm = [s for s in solvers() if s.family == "gemm"]
keys = []
for m in MODELS:
    for p in model_problems(m, batch=32, dtypes=("FP16", "BF16"), layouts=("NHWC",)):
        k = p.key()
        if k in held and k not in r50 and k not in keys and any(s.applicability(p) for s in gemm):
            keys.append(k)
print(json.dumps(keys, indent=0))
print(f"{len(keys)} problems", file=sys.stderr)
