# Issue 25's CLI case: pfamA_like (pfam35_dev x 9, pressed) x proteins_dev (x 1), whole process with
# -o /dev/null --tblout --domtblout, as PARTS="3 1 2" processes (search --model-parts), one after the other
# after the kernels are built; the tables' rows compared. Needs pyopencl and pyhmmer (DATA/whl) and the
# OpenCL ICD of ../shared/DEVICE.md's prelude; DATA: make_scale.py and its inputs.
set -u
S=${DATA:-.devdata}; D=/tmp/cli; mkdir -p $D
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
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
