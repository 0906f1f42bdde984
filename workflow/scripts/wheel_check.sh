#!/bin/sh
# CI: what `pip install` of a built wheel gives. Builds hmmcascade's wheel from this repository,
# installs it with its dependencies and the "cpu" extra into a fresh virtual environment, and
# there, from a temporary folder outside the repository, checks that an OpenCL device builds the
# kernels the wheel carries and that a search of the embedded default's first 3 models against
# its proteins writes a --tblout with hits.
# Usage: sh workflow/scripts/wheel_check.sh   (PYTHON: the interpreter of the venv, default python3)
#
# As in setup.sh: PoCL from PyPI (extra "cpu") cannot target CPUs newer than its LLVM 14 knows;
# there the venv's OpenCL loader also reads the system's ICDs (/etc/OpenCL/vendors), and when no
# device builds the kernels, as root on Debian/Ubuntu, Debian's pocl-opencl-icd is installed.
set -eu
cd "$(dirname "$0")/../.."
repo=$(pwd)
unset PYTHONPATH  # the package must come from the wheel, not from src/
start=$(date +%s)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hmmcascade-wheel.XXXXXX")
tmp=$(cd "$tmp" && pwd)
# setuptools builds in the tree: remove its build/ and egg-info afterwards unless they were here
made=""
for d in build src/hmmcascade.egg-info; do [ -e "$d" ] || made="$made $d"; done
cleanup() {
    rm -rf "$tmp"
    for d in $made; do rm -rf "${repo:?}/$d"; done
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

"${PYTHON:-python3}" -m venv "$tmp/venv"
py="$tmp/venv/bin/python"
pip() { "$py" -m pip -q --disable-pip-version-check "$@"; }
pip wheel --no-deps -w "$tmp/dist" .
wheel=$(ls "$tmp"/dist/hmmcascade-*.whl)
"$py" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
kernels = [n for n in names if n.startswith("hmmcascade/kernels/")]
assert "hmmcascade/kernels/hmmcascade.h" in kernels, "the wheel has no kernels"
print(f"wheel_check: {sys.argv[1].rsplit('/', 1)[-1]}: {len(kernels)} kernel files", flush=True)
PY
pip install "$wheel[cpu]"

mkdir "$tmp/run"
cd "$tmp/run"
hmmcascade="$tmp/venv/bin/hmmcascade"
"$py" -c 'import sys, hmmcascade.device as d; k = str(d.kernels_dir()); print("wheel_check: kernels from", k); assert k.startswith(sys.prefix), k'
"$hmmcascade" devices
if ! "$hmmcascade" devices --check; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "wheel_check: no OpenCL device builds kernels; installing Debian's PoCL (pocl-opencl-icd)" >&2
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd >/dev/null
    fi
    "$hmmcascade" devices --check
fi

"$py" - "$repo/resources/pfam35_default.hmm.gz" "$tmp/run/first3.hmm" <<'PY'
import gzip, sys
models = gzip.open(sys.argv[1], "rt").read().split("//\n")[:3]
open(sys.argv[2], "w").write("".join(m + "//\n" for m in models))
PY
"$hmmcascade" search --quiet --tblout "$tmp/run/hits.tbl" "$tmp/run/first3.hmm" "$repo/resources/proteins_default.faa.gz"
rows=$(grep -vc '^#' "$tmp/run/hits.tbl" || true)
if [ "$rows" -eq 0 ]; then
    echo "wheel_check: FAILED: no hit rows in the tblout" >&2
    exit 1
fi
models=$(grep -v '^#' "$tmp/run/hits.tbl" | awk '{print $3}' | sort -u | tr '\n' ' ')
echo "wheel_check: ok, $rows hits in the tblout (models: ${models% }), $(($(date +%s) - start)) s"
