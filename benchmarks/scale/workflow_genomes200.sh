# Issue 29's benchmark: 200 renamed copies of a real bacterial genome (pyrodigal's test genome
# GCF_001457455.1 NCTC11397, 2.46 Mb, one contig) x pfamA_like (pfam35_dev x 9 = 22,194 models) through
# the workflow (snakemake --cores 16, default profile, gathering cutoffs), then pyhmmer on 16 cores on
# one genome's proteins in the same command. Needs the prelude of ../shared/DEVICE.md, Snakemake's
# wheels, pyarrow, matplotlib and pyrodigal in /tmp/site; DATA (default .devdata) holds
# pfam35_dev.hmm.gz, proteins_dev.faa.gz and make_scale.py. Results under $OUT.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
S=${DATA:-.devdata}; D=/tmp/wfg; G=$D/genomes; N=${GENOMES:-200}; mkdir -p $D $G $OUT
[ -s $D/pfamA_like.hmm ] || python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz 1 $D
src=$(python3 -c "import os, pyrodigal; print(os.path.join(os.path.dirname(pyrodigal.__file__), 'tests', 'data', 'GCF_001457455.1_NCTC11397_genomic.fna.gz'))")
for i in $(seq -w 1 $N); do [ -s $G/g$i.fna.gz ] || cp $src $G/g$i.fna.gz; done
ls $G | wc -l
cat > $D/config.yaml <<C
databases: local
hmms: $D/pfamA_like.hmm
genomes: $G
C
# SLOTS=2: two search jobs share the one GPU (as in workflow_sprot60.sh: the device listed twice, each job a
# DEVICE_MEMORY budget, default 34G; --resources gpu=2)
SLOTS=${SLOTS:-1}
if [ "$SLOTS" -gt 1 ]; then
  printf 'device: [%s]\ndevice_memory: %s\n' "$(yes '"0:0"' | head -$SLOTS | paste -sd,)" "${DEVICE_MEMORY:-34G}" >> $D/config.yaml
fi
cat $D/config.yaml
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader,nounits -lms 2000 > $D/gpu.csv &
GP=$!
(while sleep 2; do free -m | awk '/^Mem:/{print $3}'; done) > $D/host_mem.csv &
H=$!
start=$(date +%s)
timeout ${WF_DEADLINE:-1500} snakemake --cores 16 --resources gpu=$SLOTS --configfile $D/config.yaml > $D/snakemake.log 2>&1
echo "snakemake rc $? after $(( $(date +%s) - start )) s"
kill $GP $H
echo "host memory in use, max over the run: $(sort -n $D/host_mem.csv | tail -1) MB (before: $(head -1 $D/host_mem.csv) MB)"
tail -15 $D/snakemake.log
for f in logs/benchmarks/*.tsv logs/benchmarks/*/*.tsv; do echo "== $f"; cat $f; done
tail -n 3 logs/call_genes/*.log logs/split_genomes/*.log logs/merge_hits/*.log 2>/dev/null
head -30 results/accuracy.txt 2>/dev/null
head -5 results/genomes/summary.tsv
sort -t, -k2 -n $D/gpu.csv | tail -1
# pyhmmer, 16 cores, gathering cutoffs, on one genome's proteins (the workflow's own gene calls)
python3 - <<P
import time, pyhmmer
with pyhmmer.easel.SequenceFile("results/genomes/g$(printf %0${#N}d 1)/g$(printf %0${#N}d 1).faa", digital=True) as f:
    seqs = f.read_block()
with pyhmmer.plan7.HMMFile("$D/pfamA_like.hmm") as f:
    hmms = list(f)
t = time.perf_counter()
hits = list(pyhmmer.hmmsearch(hmms, seqs, cpus=16, bit_cutoffs="gathering"))
s = time.perf_counter() - t
print(f"pyhmmer 16 cores, one genome ({len(seqs)} proteins) x {len(hmms)} models, --cut_ga: {s:.2f} s,"
      f" {sum(len(h.reported) for h in hits)} hits; {3600 / s:.0f} genomes per hour")
P
tar czf $OUT/wfg_logs.tgz logs $D/snakemake.log $D/gpu.csv $D/host_mem.csv results/accuracy.txt results/stats.json results/genomes/summary.tsv 2>/dev/null
echo DONE
