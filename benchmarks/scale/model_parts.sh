# One search job of issue 25's workflow (model shard K of 5 of pfamA_like x sprot_like, one batch of all
# 561,960 proteins) as PARTS="2 3" processes on the GPU (search --model-parts), one after the other, with the
# GPU's memory and the machine's memory in use sampled every second; the hit folders' rows compared.
# Needs the prelude of ../shared/DEVICE.md and pyarrow in /tmp/site; DATA: make_scale.py and its inputs.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
S=${DATA:-.devdata}; D=/tmp/wf; mkdir -p $D $OUT
[ -s $D/sprot_like.faa ] || python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz 60 $D
T() { /usr/bin/time -f "TIME $1 %e s %M KB" "${@:2}"; }
[ -s $D/m.hmmc ] || T press python3 -m hmmcascade press $D/pfamA_like.hmm -o $D/m.hmmc 2>&1 | tail -1
[ -s $D/prep/batch000.npz ] || T prepare python3 -m hmmcascade prepare $D/sprot_like.faa --outdir $D/prep \
  --meta $D/prep/seq.json --batches 1 2>&1 | tail -1
python3 -m hmmcascade devices --build --device auto > /dev/null 2>&1
for n in ${PARTS:-2 3}; do
  nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits -lms 1000 > $D/gpu$n.csv &
  G=$!
  (while sleep 1; do free -m | awk '/^Mem:/{print $3}'; done) > $D/host$n.csv &
  H=$!
  T parts$n python3 -m hmmcascade search $D/m.hmmc $D/prep/batch000.npz -o /dev/null --hits $D/h$n.parquet \
    --hits-parts 8 --stats $D/s$n.json --model-parts $n --model-shard ${K:-3}/5 -Z 561960 2> $D/log$n.txt
  kill $G $H
  grep -v "^\[hmmcascade part" $D/log$n.txt | tail -4
  echo "parts $n: GPU memory max $(cut -d, -f1 $D/gpu$n.csv | sort -n | tail -1) MiB, mean utilization" \
    "$(awk -F, '{s+=$2; n++} END {printf "%.0f", s/n}' $D/gpu$n.csv)%; host memory in use max $(sort -n $D/host$n.csv | tail -1) MB"
done
python3 - <<'P'
import glob, pyarrow.parquet as pq
t = {}
for f in sorted(glob.glob('/tmp/wf/h*.parquet')):
    tab = pq.read_table(f).sort_by([("model", "ascending"), ("target", "ascending")])
    t[f] = tab
    print(f, tab.num_rows)
v = list(t.values())
print("hit rows equal:", all(x.equals(v[0]) for x in v[1:]))
P
