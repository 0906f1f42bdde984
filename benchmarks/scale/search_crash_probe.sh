# The segmentation fault of 2026-11-26 (two H200s): every search job of workflow_multigpu.sh (pfamA_like x 9
# pressed to one models.hmmc, 6 model shards, sprot_like x 60 in one batch) died at its first domain batch
# (about 14 s, 23.9% of the residues) with the main thread in domaindef/envelopes.py and a worker thread
# building alignment text; the same command on a 2-copy database (4,932 models, shard 1/2) did not.
# This runs the workflow's exact search command outside Snakemake, two at a time (one per GPU), with
# variants, each stopped after T seconds (rc 124: alive at the end; 139: the fault).  Needs the prelude of
# ../shared/DEVICE.md, pyarrow; DATA holds pfam35_dev.hmm.gz, proteins_dev.faa.gz and make_scale.py.
set -u
S=${DATA:-.devdata}; D=/tmp/wfm; P=$D/prep; T=${T:-75}; mkdir -p $P ${OUT:-/tmp/probe_out}
PYB=${PYB:-python3}
[ -s $D/sprot_like.faa ] || python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz 60 $D
[ -s $P/models.hmmc ] || python3 -m hmmcascade press $D/pfamA_like.hmm -o $P/models.hmmc
[ -s $P/sequences.json ] || python3 -m hmmcascade prepare $D/sprot_like.faa --outdir $P --meta $P/sequences.json --batches 1
export PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1
run_() { # name shard device HMMCASCADE_OPTIONS [models] [targets]
  s=$(date +%s)
  PYTHONPATH=${SRC:-$PWD/src}:${PYTHONPATH:-} HMMCASCADE_OPTIONS="$4" timeout $T $PYB -m hmmcascade search ${5:-$P/models.hmmc} ${6:-$P/batch000.npz} -o /dev/null \
    --hits $D/$1.parquet --hits-parts 8 --stats $D/$1.stats.json --device $3 --device-memory auto --model-shard $2 \
    --targets-from $P/sequences.json --F1 0.02 --F2 0.001 --F3 1e-05 -E 10.0 --domE 10.0 --incE 0.01 --incdomE 0.01 2> $D/$1.log
  echo "$1 (shard $2, device $3, options '$4') rc $? after $(( $(date +%s) - s )) s"
  grep -m1 "Fatal" $D/$1.log; grep -A3 "Current thread" $D/$1.log; grep "hmmcascade\]" $D/$1.log | tail -1 | cut -c1-160
  cp $D/$1.log ${OUT:-/tmp/probe_out}/
}
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
pair() { # "name shard options" twice: side by side on two GPUs, else one after the other on the one
  set -- "$1" "$2"; read -r n1 s1 o1 <<< "$1"; read -r n2 s2 o2 <<< "$2"
  if [ "$NG" -ge 2 ]; then run_ $n1 $s1 0:0 "$o1" & run_ $n2 $s2 0:1 "$o2" & wait
  else run_ $n1 $s1 0:0 "$o1"; run_ $n2 $s2 0:0 "$o2"; fi
}
# this tree, and a copy whose Device.sub_buffer does not hold the sub-buffers (released as the launches go,
# as before 2026-11-27): the one change made for this fault
rm -rf /tmp/src_nohold && cp -r $PWD/src /tmp/src_nohold
sed -i "s/        s._hmmcascade_parent = buf/        pass/" /tmp/src_nohold/hmmcascade/device.py
grep -c '^        pass$' /tmp/src_nohold/hmmcascade/device.py
if [ "$NG" -ge 2 ]; then run_ default1 1/6 0:0 "" & SRC=/tmp/src_nohold run_ nohold1 1/6 0:1 "" & wait
else run_ default1 1/6 0:0 ""; SRC=/tmp/src_nohold run_ nohold1 1/6 0:0 ""; fi
pair "default5 5/6" "default2 2/6"
pair "warp1 1/6 region_forward=warp" "serial5 5/6 region_forward=serial"
pair "noside1 1/6 side_queue=off" "null2host1 1/6 null2=host"
# the mapped database against the same models pressed in memory (about 45 s) and the prepared batch against the FASTA
T=$((T + 60)) run_ inmem1 1/6 0:0 "" $D/pfamA_like.hmm
run_ fasta1 1/6 0:0 "" $P/models.hmmc $D/sprot_like.faa
