# Issue 25's acceptance run: the workflow (snakemake --cores 16, default profile) on pfamA_like
# (pfam35_dev x 9) x sprot_like (proteins_dev x 60) on the GPU machine, under a deadline of
# WF_DEADLINE seconds (the device's 10-minute command limit); per-rule benchmark tables, logs and
# nvidia-smi samples go to $OUT/wf_logs.tgz. SLOTS=2: two searches at a time on the one GPU (below). Needs the prelude of ../shared/DEVICE.md, Snakemake's
# wheels (device-wheels.sh --workflow) and pyarrow in /tmp/site; DATA as in search_and_merge_37k.sh.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; df -h /tmp . | tail -2
S=${DATA:-.devdata}; D=/tmp/wf; mkdir -p $D $OUT
[ -s $D/sprot_like.faa ] || /usr/bin/time -f "TIME make_scale %e s" python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz 60 $D
ls -la $D
cat > $D/config.yaml <<C
databases: local
hmms: $D/pfamA_like.hmm
sequences: $D/sprot_like.faa
C
# SLOTS=2: two search jobs share the one GPU (the device listed twice, each job a DEVICE_MEMORY budget, default 34G;
# --resources gpu=2), so that one's kernels run while the other's host work, start or writing does
SLOTS=${SLOTS:-1}
if [ "$SLOTS" -gt 1 ]; then
  printf 'device: [%s]\ndevice_memory: %s\n' "$(yes '"0:0"' | head -$SLOTS | paste -sd,)" "${DEVICE_MEMORY:-34G}" >> $D/config.yaml
fi
# MODEL_PARTS: config model_parts (processes per search job on the GPU; default auto)
if [ -n "${MODEL_PARTS:-}" ]; then echo "model_parts: $MODEL_PARTS" >> $D/config.yaml; fi
cat $D/config.yaml
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader,nounits -lms 2000 > $D/gpu.csv &
G=$!
# the machine's memory in use (MB) every 2 s: the workflow's peak host memory, all jobs together
(while sleep 2; do free -m | awk '/^Mem:/{print $3}'; done) > $D/host_mem.csv &
H=$!
free -g | head -2
start=$(date +%s)
timeout ${WF_DEADLINE:-490} snakemake --cores 16 --resources gpu=$SLOTS --configfile $D/config.yaml > $D/snakemake.log 2>&1
echo "snakemake rc $? after $(( $(date +%s) - start )) s"
kill $G $H
echo "host memory in use, max over the run: $(sort -n $D/host_mem.csv | tail -1) MB (before: $(head -1 $D/host_mem.csv) MB)"
tail -25 $D/snakemake.log
for f in logs/benchmarks/*.tsv logs/benchmarks/*/*.tsv; do echo "== $f"; cat $f; done
tail -n 3 logs/*/*.log
cat results/accuracy.txt 2>/dev/null | head -30
ls -la results results/search 2>/dev/null | head -40
sort -t, -k2 -n $D/gpu.csv | tail -1
tar czf $OUT/wf_logs.tgz logs $D/snakemake.log $D/gpu.csv $D/host_mem.csv results/accuracy.txt results/accuracy.json results/stats.json results/report 2>/dev/null
