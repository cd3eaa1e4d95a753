"""The shipped DB's TF32 groups (session-tf32/call1): per direction and batch, the best own solver's time over
cuDNN's best plan, both measured by the same find on the same buffers (verified records only), its geomean, how
many problems each side wins, and which solver the find picks; then the same per model preset at batch 32.

    python bench/results/session-tf32/tf32_ratios.py [finddb/sm_90-132.sqlite] > bench/results/session-tf32/tf32_ratios.txt
"""
import collections, math, sqlite3, sys

from miofind.models import MODELS, model_problems


def main(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    recs = collections.defaultdict(dict)
    for k, s, t in c.execute("select problem_key, solver_id, time_ms from find_records "
                             "where problem_key like '%\\_tf32' escape '\\' and verified=1"):
        recs[k][s] = t
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731

    def table(groups, label):
        print(f"| {label} | problems | own best / cuDNN best, geomean | own faster | range | picks (solver: problems) |")
        print("| --- | ---: | ---: | ---: | --- | --- |")
        for g, ks in groups.items():
            r, picks = [], collections.Counter()
            for k in ks:
                d = recs.get(k)
                if not d:
                    continue
                picks[min(d, key=d.get)] += 1
                cud = [t for s, t in d.items() if s.startswith("ConvCudnn")]
                own = [t for s, t in d.items() if not s.startswith("ConvCudnn")]
                if cud and own:
                    r.append(min(own) / min(cud))
            if r:
                top = ", ".join(f"{s}: {n}" for s, n in picks.most_common(4))
                print(f"| {g} | {len(r)} | {gm(r):.3f} | {sum(x < 1 for x in r)} | {min(r):.2f}-{max(r):.2f} | {top} |")
        print()

    print(f"{len(recs)} TF32 problems, {sum(map(len, recs.values()))} verified records in {db}\n")
    by = collections.defaultdict(list)
    for k in recs:
        by[f"{k.rsplit('-', 1)[1][0]} N={'1' if k.split('-')[7] == '1' else '32'}"].append(k)
    table(dict(sorted(by.items())), "direction, batch")
    for n in (32,):
        table({f"{m} N={n} {d}": [p.key() for p in model_problems(m, batch=n, directions=d, tf32=True)]
               for m in MODELS for d in "FBW"}, "preset, direction")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "finddb/sm_90-132.sqlite")
