"""Learning curve: a held-out preset's leave-one-preset-out accuracy against which other presets train the
model (the shipped recipe, default configs, seed 1), every combination of 4, 3 and 2 of them.

python bench/results/costmodel-v7/learning_curve.py inception_v3 > bench/results/costmodel-v7/learning_curve_inception.txt
(stopped after the pairs; stderr's first line is in the file too)"""
import sys, itertools, json
sys.path.insert(0, 'bench'); sys.path.insert(0, '.')
from collections import defaultdict
from miofind import costmodel as cm
from miofind.db import FindDB
from eval_costmodel import preset_keys, held_out_keys, evaluate_split, metrics
db = FindDB('finddb/sm_90-132.sqlite', readonly=True, immutable=True)
samples = cm.samples_from_db(db)
finds = defaultdict(list)
for r in db.iter_records(None): finds[r.problem_key].append(r)
groups = {"resnet": ("resnet50", "resnet101"), "vgg16": ("vgg16",), "mobilenet_v2": ("mobilenet_v2",),
          "inception_v3": ("inception_v3",), "unet": ("unet",)}
keys = {g: set().union(*(held_out_keys(m) for m in ms)) for g, ms in groups.items()}
allpreset = set().union(*keys.values())
other = set(finds) - allpreset   # problems of no preset (extra shapes in the DB)
print("problems of no preset:", len(other), file=sys.stderr)
held = sys.argv[1]
test = set().union(*(preset_keys(m) for m in groups[held])) & set(finds)
rest = [g for g in groups if g != held]
out = []
for n in range(len(rest), 0, -1):
    for combo in itertools.combinations(rest, n):
        train_keys = set().union(*(keys[g] for g in combo)) | other
        train_keys -= keys[held]
        tr = [s for s in samples if s.problem_key in train_keys]
        model = cm.train(tr, default_configs=True)
        probs = evaluate_split(test, {k: v for k, v in finds.items() if k in train_keys}, finds, model, 132)
        m = metrics(probs, 2)
        out.append((n, combo, m))
        print(n, combo, f"{100*m['top1']:.1f}% {100*m['mean_slowdown']:.2f}% {m['worst_slowdown']:.2f}x", flush=True)
