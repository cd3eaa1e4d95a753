# Leave one preset out on the shipped DB with call 3's ResNeXt-101 records (always trained on: no preset holds them),
# the shipped recipe (alignment features) at seeds 1-3, and seed 1 without the alignment features.
cd /work/main
export PATH=/tmp/venv/bin:$PATH
O=bench/results/session-nov27b/lopo
for seed in 1 2 3; do
  python bench/eval_costmodel.py --default-configs --seed $seed --out $O/seed$seed --rows /tmp/nov27b_rows_s$seed.json > /dev/null 2> $O/seed$seed.log
  gzip -c /tmp/nov27b_rows_s$seed.json > $O/seed$seed/rows.json.gz
done
python bench/eval_costmodel.py --default-configs --seed 1 --no-align-features --out $O/seed1-noalign > /dev/null 2> $O/seed1-noalign.log
echo done
