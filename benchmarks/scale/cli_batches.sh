# Issue 25's CLI case (pfamA_like pressed x proteins_dev, -o /dev/null --tblout --domtblout, one process) with the
# targets cut into batches of at most BATCHES residues each (--kernel-options batch_residues=N; auto: 3 batches of
# 1 Mi residues, the last halved), ROUNDS times alternating: does a shorter last batch (the records made after the
# device's last launch) end the search sooner? Needs what cli_parts.sh needs.
set -u
S=${DATA:-.devdata}; D=/tmp/cli; mkdir -p $D
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
[ -s $D/pfamA_like.hmm ] || python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz 1 $D > /dev/null
[ -s $D/m.hmmc ] || python3 -m hmmcascade press $D/pfamA_like.hmm -o $D/m.hmmc 2>&1 | tail -1
python3 -m hmmcascade devices --build --device auto 2>&1 | tail -1
for r in $(seq ${ROUNDS:-2}); do
  for b in ${BATCHES:-auto 500000 250000}; do
    /usr/bin/time -f "TIME round $r batch_residues=$b %e s %M KB" python3 -m hmmcascade search $D/m.hmmc \
      $S/proteins_dev.faa.gz -o /dev/null --tblout $D/tb$b.tbl --domtblout $D/db$b.dom --model-parts 1 \
      --kernel-options batch_residues=$b 2> $D/eb$b.txt
    grep "TIME\|to the search's end" $D/eb$b.txt | tr '\n' ' '; echo
  done
done
for b in ${BATCHES:-auto 500000 250000}; do echo "b=$b $(grep -v '^#' $D/tb$b.tbl | md5sum) $(grep -v '^#' $D/db$b.dom | md5sum)"; done
