#!/bin/sh
# Set up ./.venv with hmmcascade (editable) and the given extras, and make sure an OpenCL
# device can build the kernels. Usage: sh workflow/scripts/setup.sh [EXTRAS]   (default: cpu,workflow)
#
# PoCL from PyPI (extra "cpu") is built with LLVM 14, which cannot target CPUs newer than it
# knows (e.g. AMD Zen 5); there, as root on Debian/Ubuntu, Debian's PoCL is installed instead.
set -eu
cd "$(dirname "$0")/../.."
extras="${1:-cpu,workflow}"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"
if ! .venv/bin/python -m hmmcascade devices --check >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: no OpenCL device builds kernels; installing Debian's PoCL (pocl-opencl-icd)" >&2
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd >/dev/null
    fi
fi
# the tests check GFF3 with genometools' gt gff3validator and the main output against Debian's hmmsearch
# (each skipped without it), and run the workflow on a one-node SLURM cluster of Debian's slurm-wlm and
# munge (tests/test_slurm.py: skipped without them only when not root)
case ",$extras," in *,test,*)
    missing=""
    command -v gt >/dev/null 2>&1 || missing="$missing genometools"
    command -v hmmsearch >/dev/null 2>&1 || missing="$missing hmmer"
    [ -x /usr/sbin/slurmctld ] || command -v slurmctld >/dev/null 2>&1 || missing="$missing slurm-wlm"
    [ -x /usr/sbin/munged ] || command -v munged >/dev/null 2>&1 || missing="$missing munge"
    if [ -n "$missing" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing$missing for the tests" >&2
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null || true
    fi
esac
.venv/bin/python -m hmmcascade devices --check
