# Pfam-A-sized models (make_scale.py: pfam35_dev x 9) x proteins_dev x 1 and x 4 on the GPU machine: the
# search's hit file and the merge of 4 batches with all outputs, this checkout ("new") against another
# source tree ("old", OLD_SRC: e.g. `git archive <commit> src | tar -x -C /tmp` and carry it), then
# pyhmmer on 16 cores on a quarter of proteins_dev. Run after the prelude of ../shared/DEVICE.md with
# pyarrow installed in /tmp/site (its wheel in a call of its own: the carry limit); DATA: a folder
# with make_scale.py, pfam35_dev.hmm.gz and proteins_dev.faa.gz. Used for RESULTS.md, 2026-11-26.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
python3 -c "import pyarrow; print('pyarrow', pyarrow.__version__)" || exit 1
S=${DATA:-.devdata}; D=/tmp/scale; mkdir -p $D $OUT
NEW=$PWD/src:/tmp/site; OLD=${OLD_SRC:-$PWD/.old_src}:/tmp/site
T() { /usr/bin/time -f "TIME $1 %e s %M KB" "${@:2}"; }
python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz 4 $D
T press python3 -m hmmcascade press $D/pfamA_like.hmm -o $D/m.hmmc 2>&1 | tail -1
# warm the kernel cache
python3 -m hmmcascade search $D/m.hmmc $S/proteins_dev.faa.gz --quiet --tblout /dev/null 2>&1 | tail -1
for r in 1 2; do
  PYTHONPATH=$OLD T cli_parquet_old python3 -m hmmcascade search $D/m.hmmc $S/proteins_dev.faa.gz --quiet --hits /tmp/old.parquet 2>&1 | tail -1
  PYTHONPATH=$NEW T cli_parquet_new python3 -m hmmcascade search $D/m.hmmc $S/proteins_dev.faa.gz --quiet --hits /tmp/new.parquet 2>&1 | tail -1
done
python3 - <<'P'
import pyarrow.parquet as pq
a, b = pq.read_table('/tmp/old.parquet'), pq.read_table('/tmp/new.parquet')
print("hit files: rows", a.num_rows, b.num_rows, "equal:", a.equals(b))
P
T prepare python3 -m hmmcascade prepare $D/sprot_like.faa --outdir $D/prep --meta $D/prep/seq.json --batches 4 2>&1 | tail -1
for b in 000 001 002 003; do
  T search$b python3 -m hmmcascade search $D/m.hmmc $D/prep/batch$b.npz --quiet --targets-from $D/prep/seq.json --hits $D/b$b.hits.parquet 2>&1 | tail -1
done
for v in old new; do
  mkdir -p $D/$v
  [ $v = old ] && P=$OLD || P=$NEW
  PYTHONPATH=$P T merge16_$v python3 -m hmmcascade merge $D/b*.hits.parquet --models $D/m.hmmc --targets-from $D/prep/seq.json --cpu 16 \
    --tblout $D/$v/t.tbl --domtblout $D/$v/t.dom --alignments $D/$v/t.ali --pfamscan $D/$v/t.pfam --gff3 $D/$v/t.gff3 \
    --ipr-tsv $D/$v/t.ipr --protein-summary $D/$v/t.prot --merged-hits $D/$v/hits.parquet --seqs $D/prep/batch*.npz 2>&1 | tail -1
done
for f in t.tbl t.dom t.ali t.pfam t.gff3 t.ipr t.prot; do
  cmp <(grep -v '^# \(Date\|Current dir\)' $D/old/$f) <(grep -v '^# \(Date\|Current dir\)' $D/new/$f) && echo "$f same $(wc -l < $D/new/$f) lines" || echo "$f DIFFERS"
done
python3 -c "
import pyarrow.parquet as pq; a=pq.read_table('$D/old/hits.parquet'); b=pq.read_table('$D/new/hits.parquet'); print('merged hits equal', a.equals(b), a.num_rows)"
ls -la $D/new
# pyhmmer on all cores: pfamA_like x a quarter of proteins_dev (every 4th protein), the reference scaled x4 x60
DATA=$S D=$D bash "$(dirname "$0")/pyhmmer_reference.sh"
