"""Issue 25's pyhmmer reference, on the GPU machine in the same command as the workflow run:
pyhmmer.hmmsearch (all CPUs, Z = the number of proteins, domZ HMMER's) of MODELS against every
protein of PROTEINS, timed, its tblout and domtblout written with TopHits.write; with ``--ours TBL DOM``
our tables of the same search (``hmmcascade search MODELS PROTEINS --tblout TBL --domtblout DOM``) are
compared with pyhmmer's row by row as printed (benchmarks/rows_as_printed.py's comparison).

  python3 benchmarks/scale/pyhmmer_tables.py MODELS PROTEINS [--scale 60] [--ours TBL DOM] [--json FILE]
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyhmmer  # noqa: E402
from rows_as_printed import compare, pyhmmer_tables, rows  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models")
    ap.add_argument("proteins")
    ap.add_argument("--scale", type=float, default=60.0, help="the reference's multiple (sprot_like = x60)")
    ap.add_argument("--ours", nargs=2, metavar=("TBL", "DOM"), default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    report = {"pyhmmer": pyhmmer.__version__, "cpus": os.cpu_count(), "models": args.models,
              "proteins": args.proteins}
    with tempfile.TemporaryDirectory() as tmp:
        paths, seconds = pyhmmer_tables(args.models, args.proteins, tmp)
        ref = {k: rows(p, k) for k, p in paths.items()}
        report.update(seconds=round(seconds, 2), scaled_s=round(seconds * args.scale, 1), scale=args.scale,
                      tblout_rows=len(ref["t"]), domtblout_rows=len(ref["d"]))
        print(f"pyhmmer {pyhmmer.__version__} hmmsearch, {os.cpu_count()} CPUs: {seconds:.2f} s, {len(ref['t'])} "
              f"tblout rows, {len(ref['d'])} domtblout rows; x{args.scale:g} = {seconds * args.scale:.0f} s", flush=True)
        if args.ours:
            for kind, path in zip("td", args.ours):
                res = compare(ref[kind], rows(path, kind), kind)
                report["tblout" if kind == "t" else "domtblout"] = res
                print(json.dumps({"ours": path, **res}), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
