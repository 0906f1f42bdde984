# Issue 25's CLI case as whole processes of two or more trees, alternating: pfamA_like (pfam35_dev x 9, pressed by
# the first tree) x proteins_dev (x 1), hmmcascade search -o /dev/null --tblout --domtblout --model-parts 1.
# TREES="NAME=DIR ..." (each DIR a checkout holding src/hmmcascade; default: "new=."), ROUNDS rounds; every tree's
# bytecode compiled first (as pip install does). Prints each process's wall seconds, the search's own line and the
# tables' md5s. Needs the prelude of ../shared/DEVICE.md (pyopencl, the ICD) and DATA (make_scale.py, its inputs).
set -u
S=${DATA:-.devdata}; D=/tmp/cli; mkdir -p $D
TREES=${TREES:-new=.}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; nproc
first=${TREES%% *}; first=${first#*=}
for t in $TREES; do python3 -m compileall -q "${t#*=}/src" > /dev/null 2>&1; done
[ -s $D/pfamA_like.hmm ] || python3 $S/make_scale.py $S/pfam35_dev.hmm.gz 9 $S/proteins_dev.faa.gz 1 $D > /dev/null
[ -s $D/m.hmmc ] || PYTHONPATH=$first/src:${SITE:-/tmp/site} python3 -m hmmcascade press $D/pfamA_like.hmm -o $D/m.hmmc 2>&1 | tail -1
PYTHONPATH=$first/src:${SITE:-/tmp/site} python3 -m hmmcascade devices --build --device auto 2>&1 | tail -1
for r in $(seq 1 ${ROUNDS:-3}); do
  for t in $TREES; do
    name=${t%%=*}; dir=${t#*=}
    PYTHONPATH=$dir/src:${SITE:-/tmp/site} /usr/bin/time -f "TIME %e s %M KB" python3 -m hmmcascade search $D/m.hmmc \
      $S/proteins_dev.faa.gz -o /dev/null --tblout $D/t_$name.tbl --domtblout $D/d_$name.dom --model-parts 1 2> $D/e_$name.txt
    echo "round $r $name: $(grep TIME $D/e_$name.txt) | $(grep "to the search's end" $D/e_$name.txt)"
  done
done
for t in $TREES; do
  name=${t%%=*}
  echo "$name tblout $(grep -v '^#' $D/t_$name.tbl | md5sum | cut -c1-32) domtblout $(grep -v '^#' $D/d_$name.dom | md5sum | cut -c1-32)"
done
