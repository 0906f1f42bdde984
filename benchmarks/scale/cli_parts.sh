# Issue 25's CLI case: pfamA_like (pfam35_dev x 9, pressed) x proteins_dev (x 1), whole process with
# -o /dev/null --tblout --domtblout, as PARTS="3 1 2" processes (search --model-parts), one after the other
# after the kernels are built; the tables' rows compared. Needs pyopencl and pyhmmer (DATA/whl) and the
# OpenCL ICD of ../shared/DEVICE.md's prelude; DATA: make_scale.py and its inputs.
set -u
S=${DATA:-.devdata}; D=/tmp/cli; mkdir -p $D
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
# the package's bytecode compiled, as pip install does (the device machine sets PYTHONDONTWRITEBYTECODE=1 and the
# prelude installs with --no-compile: every process then compiled every module it imported, ~0.6 s, 2026-11-28)
python3 -m compileall -q src ${SITE:-/tmp/site} > /dev/null 2>&1
[ -s $D/pfamA_like.hmm ] || python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz 1 $D > /dev/null
T() { /usr/bin/time -f "TIME $1 %e s %M KB" "${@:2}"; }
T press python3 -m hmmcascade press $D/pfamA_like.hmm -o $D/m.hmmc 2>&1 | tail -1
T build python3 -m hmmcascade devices --build --device auto 2>&1 | tail -1
for n in ${PARTS:-3 1 2}; do
  T parts$n python3 -m hmmcascade search $D/m.hmmc $S/proteins_dev.faa.gz -o /dev/null --tblout $D/t$n.tbl \
    --domtblout $D/d$n.dom --model-parts $n 2> $D/e$n.txt
  grep "TIME\|to the search's end\|parts,\|reported hits" $D/e$n.txt | tail -4
done
for f in t d; do for n in ${PARTS:-3 1 2}; do echo "$f$n $(grep -v '^#' $D/$f$n.* | md5sum) $(grep -vc '^#' $D/$f$n.*)"; done; done
# PROFILE=1: one more 1-process search under cProfile (slower), its statistics in $OUT/cli_search.prof and the
# writing's functions printed (what the 'writing' seconds are spent on)
if [ -n "${PROFILE:-}" ]; then
  python3 -m cProfile -o ${OUT:-/tmp}/cli_search.prof -m hmmcascade search $D/m.hmmc $S/proteins_dev.faa.gz -o /dev/null \
    --tblout $D/tp.tbl --domtblout $D/dp.dom --model-parts 1 2>&1 | grep "to the search's end\|reported hits"
  python3 - ${OUT:-/tmp}/cli_search.prof <<'P'
import pstats, sys
s = pstats.Stats(sys.argv[1])
s.sort_stats("cumulative").print_stats("cli.py|output.py|results.py|cascade.py", 25)
s.sort_stats("tottime").print_stats(25)
P
fi
# SPLIT=1: one more 1-process search in a wrapper timing the command's main() apart from the interpreter's start,
# the package's import and the exit (whole process minus main)
if [ -n "${SPLIT:-}" ]; then
  T split python3 -c "
import sys, time
t0 = time.time()
from hmmcascade import cli
t1 = time.time()
rc = cli.main(sys.argv[1:])
print(f'# import of hmmcascade.cli {t1 - t0:.2f} s, main() {time.time() - t1:.2f} s', file=sys.stderr)
" search $D/m.hmmc $S/proteins_dev.faa.gz -o /dev/null --tblout $D/ts.tbl --domtblout $D/ds.dom --model-parts 1 2> $D/es.txt
  grep "TIME\|to the search's end\|import of" $D/es.txt
fi
