# Issue 25's acceptance in one command on the GPU machine: the workflow run (workflow_sprot60.sh: pfamA_like x
# sprot_like, snakemake --cores 16, the default profile), then pyhmmer on all 16 cores on pfamA_like x proteins_dev
# (x 1), timed and scaled x 60 as the reference (pyhmmer_tables.py), its tables compared row by row with the CLI's
# of the same search where cli_parts.sh left them (/tmp/cli/t1.tbl, d1.dom). Needs what workflow_sprot60.sh needs,
# and pyhmmer.
set -u
S=${DATA:-.devdata}
start=$(date +%s)
bash benchmarks/scale/workflow_sprot60.sh
echo "workflow script ended after $(( $(date +%s) - start )) s"
ours=""; [ -s /tmp/cli/t1.tbl ] && ours="--ours /tmp/cli/t1.tbl /tmp/cli/d1.dom"
/usr/bin/time -f "TIME pyhmmer_tables %e s %M KB" python3 benchmarks/scale/pyhmmer_tables.py /tmp/wf/pfamA_like.hmm \
  $S/proteins_dev.faa.gz --scale 60 $ours --json $OUT/pyhmmer_reference.json
echo "acceptance script ended after $(( $(date +%s) - start )) s"
