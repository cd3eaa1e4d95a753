"""Problem lists for the device, as MIOpenDriver lines (``miofind tune --file``), for the cost model's data
(issue 20).

``layers``: random convolution layers of the kinds CNNs have, none of them a preset's on purpose: filters
1x1 to 11x11 with the asymmetric 1xn / nx1 ones, strides 1, 2 and 4, same or no padding, dense, grouped
and depthwise, channels 3 to 2048, sizes 7 to 299, batches 1 to 64; each layer at one random data type and
layout (FP32 or FP16, NCHW or NHWC) in all three directions, its work capped (``MAX_GFLOP``,
``MAX_ELEMENTS``). Seeded: the same seed gives the same lines.

``sizes``: the same random layers on a grid of spatial sizes (``SIZE_GRID``: every size 1 to 40 and the common
larger ones), at the filters CNNs use most (1x1, and 3x3 with same padding), stride 1, for each data type and
layout: cuDNN's times jump with the spatial size alone (at 8x8, FP16 NCHW backward data of a 1x1 filter takes 2.1-2.6x
our GEMM's time; at 7x7 and 9x9 about 1x), which random layers sample too thinly to learn. No layer is a preset's
(``eval_costmodel.held_out_keys``).

``resample``: a stratified random sample of the problems the leave-one-preset-out evaluation tests
(``bench/eval_costmodel.py``) that the FindDB holds, one line per problem, to be measured again: how often
a second measurement agrees with the first on the fastest solver (``bench/noise_ceiling.py``).

    python bench/sweep_problems.py layers --count 600 --seed 20 > layers.txt
    python bench/sweep_problems.py sizes --seed 30 > sizes.txt
    python bench/sweep_problems.py resample --count 240 --seed 20 > resample.txt
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from miofind.problem import ProblemDescription  # noqa: E402

MAX_GFLOP = 60.0
MAX_ELEMENTS = 48 << 20
FILTERS = [((1, 1), 30), ((3, 3), 30), ((5, 5), 6), ((7, 7), 5), ((1, 3), 3), ((3, 1), 3), ((1, 5), 2),
           ((5, 1), 2), ((1, 7), 4), ((7, 1), 4), ((11, 11), 1), ((2, 2), 1)]
SIZES = [7, 8, 9, 12, 13, 14, 15, 17, 19, 20, 24, 27, 28, 30, 32, 35, 37, 40, 48, 55, 56, 60, 64, 71, 73, 80,
         96, 112, 128, 147, 149, 160, 224, 256, 299]
ODD_CHANNELS = [3, 12, 24, 40, 48, 80, 96, 112, 120, 160, 176, 192, 288, 320, 384, 448, 576, 672, 768, 960, 1280]
KINDS = [("FP32", "NCHW"), ("FP32", "NHWC"), ("FP16", "NCHW"), ("FP16", "NHWC")]
BATCHES = [1, 1, 2, 4, 8, 16, 32, 32, 64]
SIZE_GRID = list(range(1, 41)) + [42, 44, 48, 52, 56, 60, 64, 71, 73, 80, 96, 112, 128, 147, 149]


def _pick(rng, weighted):
    return rng.choices([v for v, _ in weighted], weights=[w for _, w in weighted])[0]


def _channels(rng) -> int:
    if rng.random() < 0.25:
        return rng.choice(ODD_CHANNELS)
    return 8 * max(1, round(2 ** rng.uniform(1, 8)))     # 16 to 2048, multiples of 8


def random_layer(rng) -> ProblemDescription | None:
    """One random layer (forward problem), or None where the draw makes no valid or affordable layer."""
    fy, fx = _pick(rng, FILTERS)
    stride = rng.choices([1, 2, 4], weights=[75, 22, 3])[0] if max(fy, fx) > 1 else rng.choice([1, 1, 1, 2])
    pads = (fy // 2, fx // 2) if rng.random() < 0.8 else (0, 0)
    h = rng.choice(SIZES)
    w = h if rng.random() < 0.85 else rng.choice(SIZES)
    c, k = _channels(rng), _channels(rng)
    kind = rng.random()
    groups = 1
    if kind < 0.08 and max(fy, fx) > 1:                   # depthwise, channel multiplier 1
        groups, k = c, c
    elif kind < 0.13:                                      # grouped
        groups = rng.choice([2, 4, 8, 16, 32])
        c, k = groups * max(1, c // groups), groups * max(1, k // groups)
    dtype, layout = rng.choice(KINDS)
    n = rng.choice(BATCHES)
    try:
        p = ProblemDescription.make("F", n=n, c=c, k=k, in_size=(h, w), filter_size=(fy, fx), pads=pads,
                                    strides=stride, groups=groups, dtype=dtype, layout=layout)
    except ValueError:
        return None
    if min(p.out_size) < 1 or p.flops() > MAX_GFLOP * 1e9 or max(math.prod(s) for s in p.io_shapes()) > MAX_ELEMENTS:
        return None
    return p


def driver_line(p: ProblemDescription, directions: str = "FBW") -> str:
    """``p`` (any direction) as a MIOpenDriver line for ``directions`` (its own where it is one)."""
    cmd = {"FP32": "conv", "FP16": "convfp16", "BF16": "convbfp16"}[p.dtype]
    (sy, sx), (py, px), (dy, dx) = p.strides, p.pads, p.dilations
    fy, fx = p.filter_size
    h, w = p.in_size
    mask = sum({"F": 1, "B": 2, "W": 4}[d] for d in directions)
    line = (f"{cmd} -n {p.n} -c {p.c} -H {h} -W {w} -k {p.k} -y {fy} -x {fx} -p {py} -q {px} -u {sy} -v {sx} "
            f"-l {dy} -j {dx} -g {p.groups} -F {mask}")
    if p.layout != "NCHW":
        line += f" --in_layout {p.layout} --out_layout {p.layout} --fil_layout {p.layout}"
    if p.math == "tf32":
        line += " --tf32 1"
    return line


def layers(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < count:
        p = random_layer(rng)
        if p is not None and p.key() not in seen:
            seen.add(p.key())
            out.append(driver_line(p))
    return out


GRID_FILTERS = {   # name: (filter, stride, depthwise)
    "1x1": ((1, 1), 1, False), "3x3": ((3, 3), 1, False), "5x5": ((5, 5), 1, False),
    "1x3": ((1, 3), 1, False), "3x1": ((3, 1), 1, False), "1x7": ((1, 7), 1, False), "7x1": ((7, 1), 1, False),
    "3x3s2": ((3, 3), 2, False), "dw3x3": ((3, 3), 1, True), "dw3x3s2": ((3, 3), 2, True), "dw5x5": ((5, 5), 1, True),
}


def sizes(seed: int, filters=("1x1", "3x3")) -> list[str]:
    """One random layer per output size of ``SIZE_GRID``, data type and layout, and filter of ``filters``
    (``GRID_FILTERS``; a filter larger than the size is left out), same padding."""
    from eval_costmodel import held_out_keys  # noqa: PLC0415  (bench/ on sys.path below)

    from miofind.models import MODELS

    presets = set().union(*(held_out_keys(m) for m in MODELS))
    rng = random.Random(seed)
    out = []
    for h in SIZE_GRID:
        for dtype, layout in KINDS:
            for name in filters:
                (fy, fx), stride, dw = GRID_FILTERS[name]
                if max(fy, fx) > h:
                    continue
                while True:
                    c, k, n = _channels(rng), _channels(rng), rng.choice(BATCHES)
                    if dw:
                        k = c
                    try:
                        # the input a stride-s layer with same padding needs for an output of h
                        p = ProblemDescription.make("F", n=n, c=c, k=k, in_size=(h * stride, h * stride),
                                                    filter_size=(fy, fx), pads=(fy // 2, fx // 2), strides=stride,
                                                    groups=c if dw else 1, dtype=dtype, layout=layout)
                    except ValueError:
                        continue
                    if (p.flops() <= MAX_GFLOP * 1e9 and max(math.prod(s) for s in p.io_shapes()) <= MAX_ELEMENTS
                            and not {p.key(), p.with_direction("B").key(), p.with_direction("W").key()} & presets):
                        break
                out.append(driver_line(p))
    return out


def resample(count: int, seed: int) -> list[str]:
    from eval_costmodel import preset_keys  # noqa: PLC0415  (bench/ on sys.path below)

    from miofind.db import FindDB
    from miofind.models import MODELS

    db = FindDB(str(Path(__file__).resolve().parents[1] / "finddb" / "sm_90-132.sqlite"))
    held = set(r.problem_key for r in db.iter_records(None))
    strata: dict[tuple, list[str]] = {}
    for m in MODELS:
        if m == "resnet101":   # its layers are ResNet-50's
            continue
        for key in sorted(preset_keys(m) & held):
            p = ProblemDescription.from_key(key)
            strata.setdefault((m, p.dtype, p.direction), []).append(key)
    rng = random.Random(seed)
    per = max(1, count // len(strata))
    keys = [k for s in sorted(strata) for k in rng.sample(strata[s], min(per, len(strata[s])))]
    rng.shuffle(keys)
    return [driver_line(ProblemDescription.from_key(k), ProblemDescription.from_key(k).direction) for k in keys]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["layers", "sizes", "resample"])
    ap.add_argument("--count", type=int, default=600)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--filters", default="1x1,3x3", help=f"sizes: filters of GRID_FILTERS ({', '.join(GRID_FILTERS)})")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    lines = {"layers": lambda: layers(args.count, args.seed), "sizes": lambda: sizes(args.seed, args.filters.split(",")),
             "resample": lambda: resample(args.count, args.seed)}[args.what]()
    print(f"# bench/sweep_problems.py {args.what}" + (f" --count {args.count}" if args.what != "sizes" else f" --filters {args.filters}")
          + f" --seed {args.seed}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
