"""Issue 26: our tblout and domtblout rows against pyhmmer's, as printed, for kernel variants.

  python3 benchmarks/rows_as_printed.py MODELS PROTEINS [OPTIONS ...] [--json FILE]

Each OPTIONS is a ``KEY=VALUE,...`` string of SearchOptions (``""``: the device's defaults; e.g.
``region_forward=warp`` or ``decode=serial,envelope=serial``). pyhmmer.hmmsearch (all CPUs, Z = the number
of proteins, domZ per model as HMMER's) writes its tables once with TopHits.write; each variant runs
``hmmcascade search MODELS PROTEINS --tblout --domtblout`` (the CLI, a process of its own, the options
through HMMCASCADE_OPTIONS). Rows are compared field by field as printed (whitespace-split), keyed by
(target, query) and (target, query, domain number); the tables' widths and comment lines are not
compared. Prints per variant: rows, rows missing or extra, rows differing as printed, domain rows whose
hmm/ali/env coordinates differ, and the first examples of each."""
import json
import os
import subprocess
import sys
import tempfile
import time

import pyhmmer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rows(path, kind):
    """{key: fields} of a tblout (kind "t") or domtblout ("d") file; the description (fields past the
    fixed ones) joined as one field."""
    fixed = 18 if kind == "t" else 22
    out = {}
    with open(path, "rb") as fh:
        for line in fh.read().decode().splitlines():
            if not line or line.startswith("#"):
                continue
            f = line.split(None, fixed)
            key = (f[0], f[2]) if kind == "t" else (f[0], f[3], f[9])
            out[key] = tuple(f)
    return out


def pyhmmer_tables(models, proteins, tmp):
    with pyhmmer.plan7.HMMFile(models) as f:
        hmms = list(f)
    with pyhmmer.easel.SequenceFile(proteins, digital=True) as f:
        seqs = f.read_block()
    t = time.perf_counter()
    paths = {k: os.path.join(tmp, f"pyhmmer.{k}") for k in "td"}
    with open(paths["t"], "wb") as ft, open(paths["d"], "wb") as fd:
        for hits in pyhmmer.hmmsearch(hmms, seqs, cpus=os.cpu_count(), Z=len(seqs)):
            hits.write(ft, format="targets", header=False)
            hits.write(fd, format="domains", header=False)
    return paths, time.perf_counter() - t


def compare(ref, got, kind):
    same = [k for k in ref if k in got]
    diff = [k for k in same if ref[k] != got[k]]
    res = {"rows": len(ref), "missing": len(ref) - len(same), "extra": sum(k not in ref for k in got),
           "differing_as_printed": len(diff), "examples": [[" ".join(ref[k]), " ".join(got[k])] for k in diff[:4]]}
    if kind == "d":
        coords = [k for k in diff if ref[k][15:21] != got[k][15:21]]
        res["differing_in_coordinates"] = len(coords)
        res["coordinate_examples"] = [[" ".join(ref[k][:22]), " ".join(got[k][:22])] for k in coords[:4]]
    return res


def main(argv):
    out_json = None
    if "--json" in argv:
        i = argv.index("--json")
        out_json = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    models, proteins, variants = argv[0], argv[1], argv[2:] or [""]
    report = {"models": models, "proteins": proteins, "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        ref_paths, ref_s = pyhmmer_tables(models, proteins, tmp)
        ref = {k: rows(p, k) for k, p in ref_paths.items()}
        report["pyhmmer_s"] = round(ref_s, 2)
        print(f"pyhmmer {pyhmmer.__version__}, {os.cpu_count()} CPUs: {len(ref['t'])} tblout rows, "
              f"{len(ref['d'])} domtblout rows, {ref_s:.1f} s", flush=True)
        for v in variants:
            tbl, dom = os.path.join(tmp, "ours.tbl"), os.path.join(tmp, "ours.dom")
            env = dict(os.environ, HMMCASCADE_OPTIONS=v,
                       PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")]))
            t = time.perf_counter()
            run = subprocess.run([sys.executable, "-m", "hmmcascade", "search", models, proteins, "-o", os.devnull,
                                  "--tblout", tbl, "--domtblout", dom, "--quiet"], env=env, stderr=subprocess.PIPE)
            if run.returncode:
                sys.exit(f"variant {v!r}: hmmcascade search exit {run.returncode}: {run.stderr.decode()[-2000:]}")
            r = {"process_s": round(time.perf_counter() - t, 2), "tblout": compare(ref["t"], rows(tbl, "t"), "t"),
                 "domtblout": compare(ref["d"], rows(dom, "d"), "d")}
            report["variants"][v or "(defaults)"] = r
            print(json.dumps({"variant": v or "(defaults)", **r}), flush=True)
    if out_json:
        with open(out_json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
