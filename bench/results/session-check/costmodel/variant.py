"""The leave-one-preset-out evaluation with the regression trees at another learning rate and count:
    python bench/results/session-check/costmodel/variant.py LR ROUNDS RANK_ROUNDS OUT"""
import sys
from pathlib import Path
ROOT = str(Path(__file__).resolve().parents[4])
sys.path.insert(0, ROOT); sys.path.insert(0, ROOT + "/bench")
from miofind import costmodel as cm
lr = float(sys.argv[1]); rounds = sys.argv[2]; rank = sys.argv[3]; out = sys.argv[4]
cm.PARAMS["learning_rate"] = lr
import eval_costmodel as ev
ev.main(["--default-configs", "--seed", "1", "--rounds", rounds, "--rank-rounds", rank, "--out", out])
