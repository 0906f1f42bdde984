# Issue 28 on a machine of several GPUs: three searches of the embedded default started at once with
# --device all; each claims a GPU no other process holds (a lock file per device, named by PCI address),
# the third waits for one to be freed; their tblouts must equal one search on device 0:0. Needs the
# cp312 wheels of ../shared/tools/device-wheels.sh in WHL (default .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ${WHL:-.whl}/*.whl \
  && mkdir -p /tmp/icd && ldconfig -p | awk '/libnvidia-opencl.so.1 /{print $NF; exit}' > /tmp/icd/nvidia.icd || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 OCL_ICD_VENDORS=/tmp/icd
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
python3 -m hmmcascade devices
M=resources/pfam35_default.hmm.gz; S=resources/proteins_default.faa.gz
python3 -m hmmcascade search $M $S -o /dev/null --tblout /tmp/t0.tbl --device 0:0 --quiet 2> /tmp/e0.log  # (builds the kernels once)
for i in 1 2 3; do python3 -m hmmcascade search $M $S -o /dev/null --tblout /tmp/t$i.tbl --device all --stats /tmp/s$i.json 2> /tmp/e$i.log & done
wait
for i in 1 2 3; do python3 -c "import json,sys; d=json.load(open('/tmp/s$i.json')); print('search $i:', d['device'])"; tail -1 /tmp/e$i.log; done
for i in 1 2 3; do grep -v '^#' /tmp/t$i.tbl | md5sum; done; grep -v '^#' /tmp/t0.tbl | md5sum
ls ${TMPDIR:-/tmp}/hmmcascade-devices-$(id -u)/
