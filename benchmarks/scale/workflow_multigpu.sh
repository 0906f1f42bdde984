# Issue 30: the workflow on every GPU of one machine against one GPU of the same machine, in one command.
# pfamA_like (pfam35_dev x 9 = 22,194 models) x sprot_like (proteins_dev x COPIES, default 60), shards fixed
# (SHARDS model shards, default 6) so both runs do the same jobs; device: all (each search job claims a free
# GPU with a lock file); run 1 with --resources gpu=1, run 2 with gpu=NGPU, both on every core (CORES). Needs the prelude of
# ../shared/DEVICE.md, Snakemake's wheels, pyarrow and matplotlib in /tmp/site; DATA holds pfam35_dev.hmm.gz,
# proteins_dev.faa.gz and make_scale.py. Writes per-run logs to $OUT and the tables' checksums.
set -u
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader; nproc
S=${DATA:-.devdata}; D=/tmp/wfm; C=${COPIES:-60}; K=${SHARDS:-6}; mkdir -p $D $OUT
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[ -s $D/sprot_like.faa ] || python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz $C $D
cat > $D/config.yaml <<Y
databases: local
hmms: $D/pfamA_like.hmm
sequences: $D/sprot_like.faa
device: all
shards:
  models: $K
  sequences: 1
Y
python3 -m hmmcascade devices
for g in ${ORDER:-1 $NGPU}; do
  rm -rf results logs .snakemake/log
  nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu --format=csv,noheader,nounits -lms 2000 > $D/gpu$g.csv &
  GP=$!
  (while sleep 2; do free -m | awk '/^Mem:/{print $3}'; done) > $D/host_mem$g.csv &
  H=$!
  start=$(date +%s)
  timeout ${WF_DEADLINE:-1500} snakemake --cores ${CORES:-$(nproc)} --resources gpu=$g --configfile $D/config.yaml > $D/snakemake$g.log 2>&1
  rc=$?
  echo "GPUS=$g snakemake rc $rc after $(( $(date +%s) - start )) s"
  kill $GP $H
  echo "host memory in use, max over the run: $(sort -n $D/host_mem$g.csv | tail -1) MB (before: $(head -1 $D/host_mem$g.csv) MB)"
  tail -4 $D/snakemake$g.log
  grep -h "device" results/search/*.stats.json 2>/dev/null | head -0
  python3 - <<P
import glob, json
for f in sorted(glob.glob("results/search/*.stats.json")):
    d = json.load(open(f)); print(f, d.get("device"), round(d.get("stats", {}).get("wall_s", 0), 1))
P
  for f in logs/benchmarks/*.tsv logs/benchmarks/*/*.tsv; do printf "%s\t" "$f"; tail -1 $f | cut -f1; done
  grep -h "compared\|identical" results/accuracy.txt | head -4
  # (rows only: the tables' tails name the date and the merge's command)
  for f in results/hmmcascade.tblout results/hmmcascade.domtblout results/hmmcascade.alignments.txt \
           results/hmmcascade.pfam_scan.tsv results/hmmcascade.gff3 results/hmmcascade.interproscan.tsv; do
    echo "$(grep -v '^#' $f | md5sum | cut -d' ' -f1) $(grep -vc '^#' $f) $f"
  done | tee $D/md5_$g.txt
  cp $D/snakemake$g.log $OUT/ 2>/dev/null; cp logs/compare/compare.log $OUT/compare_$g.log 2>/dev/null
  awk -F', ' '{u[$2]+=($4>0)} END {for (i in u) print "GPU " i ": samples busy " u[i]}' $D/gpu$g.csv
  tar czf $OUT/wfm_logs_$g.tgz logs $D/snakemake$g.log $D/gpu$g.csv results/accuracy.txt results/stats.json 2>/dev/null
  [ $rc -eq 0 ] || { echo "stopped: the run with $g GPU(s) failed (its logs: $OUT/wfm_logs_$g.tgz)"; break; }
done
cmp $D/md5_1.txt $D/md5_$NGPU.txt && echo "tables' rows identical between 1 and $NGPU GPUs"
echo DONE
