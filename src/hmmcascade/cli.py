"""Command line: ``hmmcascade {search,press,prepare,merge,compare,devices,fetch}``.

Every user mistake ends with one line ``hmmcascade: error: ...`` on stderr and
exit status 1 (2 for bad usage); outputs are written to a temporary name and
renamed only when complete.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from .cascade import Thresholds

__all__ = ["main"]


def _add_thresholds(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("reporting thresholds (HMMER's names)")
    x = g.add_mutually_exclusive_group()
    x.add_argument("-E", type=float, default=10.0, help="report targets with E-value <= E (default 10)")
    x.add_argument("-T", type=float, default=None, help="report targets with score >= T bits")
    x.add_argument("--cut_ga", action="store_true", help="use each model's GA (gathering) sequence cutoff")
    x.add_argument("--cut_tc", action="store_true", help="use each model's TC (trusted) sequence cutoff")
    x.add_argument("--cut_nc", action="store_true", help="use each model's NC (noise) sequence cutoff")
    _add_z(g)
    f = p.add_argument_group("filters")
    f.add_argument("--F1", type=float, default=0.02, help="MSV filter P-value threshold (default 0.02)")
    f.add_argument("--F2", type=float, default=1e-3, help="Viterbi filter P-value threshold (default 1e-3)")
    f.add_argument("--F3", type=float, default=1e-5, help="Forward filter P-value threshold (default 1e-5)")
    f.add_argument("--nobias", action="store_true", help="turn off the composition bias filter")
    f.add_argument("--max", action="store_true", help="turn off all filters (F1=F2=F3=1, no bias filter)")


def _add_z(group) -> None:
    group.add_argument("-Z", type=float, default=None, help="search space size for E-values (default: number of targets)")
    group.add_argument("--targets-from", metavar="META", default=None,
                       help="take Z from this prepare --meta JSON (the whole search's target count)")


def _search_space(args, default: float | None = None) -> float | None:
    """Z: -Z, else the target count recorded by ``prepare``, else ``default``."""
    if args.Z is not None:
        return args.Z
    if args.targets_from:
        return float(json.loads(Path(args.targets_from).read_text())["targets"])
    return default


def _thresholds(args) -> Thresholds:
    cut = "ga" if args.cut_ga else "tc" if args.cut_tc else "nc" if args.cut_nc else None
    for name in ("F1", "F2", "F3"):
        v = getattr(args, name)
        if not 0.0 < v <= 1.0:
            raise ValueError(f"--{name} must be in (0, 1], got {v}")
    if args.Z is not None and args.Z <= 0:
        raise ValueError(f"-Z must be positive, got {args.Z}")
    return Thresholds(F1=args.F1, F2=args.F2, F3=args.F3, bias_filter=not args.nobias, max_mode=args.max,
                      E=args.E, T=args.T, cut=cut, Z=_search_space(args))


def _load_models(path: str):
    from .io import read_hmms
    from .profiles import ProfileDB, press

    if path.endswith(".npz"):
        if not Path(path).is_file():
            raise ValueError(f"{path}: pressed model file not found")
        return None, ProfileDB.load(path)
    hmms = read_hmms(path)
    return hmms, press(hmms)


def _load_seqs(path: str):
    from .io import SequenceSet, read_sequences

    if path.endswith(".npz"):
        if not Path(path).is_file():
            raise ValueError(f"{path}: prepared sequence file not found")
        return SequenceSet.load(path)
    return read_sequences(path)


def cmd_devices(args) -> int:
    from .device import list_devices, open_device

    for pi, di, platform, name, gpu in list_devices():
        print(f"{pi}:{di}\t{'GPU' if gpu else 'CPU'}\t{platform}\t{name}")
    if args.check:
        dev = open_device(args.device)
        dev.program("msv")
        print(f"# kernels build on: {dev.name}")
    return 0


def cmd_press(args) -> int:
    _, db = _load_models(args.hmms)
    db.save(args.output)
    print(f"pressed {len(db)} models ({db.nodes} nodes) into {args.output}", file=sys.stderr)
    return 0


def cmd_prepare(args) -> int:
    """Sort sequences by length and split them into batches of similar total residues."""
    from .output import write_json

    seqs = _load_seqs(args.seqs)
    order = np.argsort(seqs.lengths, kind="stable")
    n = args.batches
    cum = np.cumsum(seqs.lengths[order].astype(np.int64))
    cuts = [0] + [int(np.searchsorted(cum, cum[-1] * b / n)) for b in range(1, n)] + [len(order)]
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    for b in range(n):
        seqs.subset(order[cuts[b]:cuts[b + 1]]).save(outdir / f"batch{b:03d}.npz")
    write_json(args.meta, {"source": args.seqs, "targets": len(seqs), "residues": seqs.total_residues,
                           "batches": n, "max_length": int(seqs.lengths.max())})
    print(f"prepared {len(seqs)} sequences in {n} length-sorted batches under {outdir}", file=sys.stderr)
    return 0


def cmd_search(args) -> int:
    from . import cascade, device
    from .output import hits_to_rows, pipeline_summary, progress_printer, write_hits_tsv, write_json, write_tblout

    th = _thresholds(args)
    _, db = _load_models(args.hmms)
    seqs = _load_seqs(args.seqs)
    dev = device.open_device(args.device)
    print(f"# hmmcascade search: {len(db)} models x {len(seqs)} targets on {dev.name}", file=sys.stderr, flush=True)
    res = cascade.search(db, seqs, dev, th, progress=progress_printer() if not args.quiet else None)
    rows = hits_to_rows(res, db, seqs)
    command = "hmmcascade " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    if args.tblout:
        write_tblout(args.tblout, rows, by_evalue=th.cut is None and th.T is None, command=command, Z=res.Z)
    if args.hits:
        write_hits_tsv(args.hits, rows)
    stats = res.stats.as_dict()
    if args.stats:
        write_json(args.stats, {"Z": res.Z, "device": res.device, "stats": stats})
    print(pipeline_summary(stats, res.Z, res.device, th), file=sys.stderr)
    print(f"# {len(rows)} reported hits", file=sys.stderr)
    return 0


def cmd_merge(args) -> int:
    """Merge per-batch hits tables and statistics into one tblout (queries in model order)."""
    from .output import HitRows, read_hits_tsv, write_hits_tsv, write_json, write_tblout

    rows = HitRows.concat([read_hits_tsv(p) for p in args.hits])
    Z = _search_space(args)
    write_tblout(args.tblout, rows, by_evalue=not args.bits_order, command="hmmcascade merge", Z=Z)
    if args.merged_hits:
        write_hits_tsv(args.merged_hits, rows)
    if args.stats:
        from .cascade import StageStats

        batches = [json.loads(Path(path).read_text())["stats"] for path in args.batch_stats]
        total = StageStats.combine_batches(batches).as_dict() if batches else {}
        write_json(args.stats, {"Z": Z, "stats": total})
    print(f"merged {len(rows)} hits from {len(args.hits)} batches into {args.tblout}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    from .compare import compare_hits, run_pyhmmer, summary_text
    from .io import read_hmms
    from .output import read_hits_tsv, write_json

    th = _thresholds(args)
    Z = th.Z if th.Z is not None else float(len(_load_seqs(args.seqs)))
    ref = run_pyhmmer(read_hmms(args.hmms), args.seqs, th, Z, cpus=args.cpus)
    result = compare_hits(read_hits_tsv(args.ours), ref)
    result["Z"] = Z
    write_json(args.json, result)
    text = summary_text(result)
    if args.summary:
        from .output import atomic_path

        with atomic_path(args.summary) as tmp:
            Path(tmp).write_text(text + "\n")
    print(text, file=sys.stderr)
    if args.require_recall is not None and result["recall"] < args.require_recall:
        raise ValueError(f"recall {result['recall']:.4f} below the required {args.require_recall}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .fetch import add_fetch_parser

    p = argparse.ArgumentParser(prog="hmmcascade", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"hmmcascade {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("search", help="search models against sequences (MSV -> Viterbi -> Forward)")
    s.add_argument("hmms", help="HMMER3 models (text/binary, .gz ok) or a pressed .npz")
    s.add_argument("seqs", help="protein FASTA (.gz ok) or a prepared .npz batch")
    s.add_argument("--tblout", help="write HMMER's per-target table here")
    s.add_argument("--hits", help="write the hits table (TSV, for merge) here")
    s.add_argument("--stats", help="write per-stage statistics (JSON) here")
    s.add_argument("--device", default=None, help="auto (default), gpu, cpu, P:D, or a name substring")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    _add_thresholds(s)
    s.set_defaults(func=cmd_search)

    s = sub.add_parser("press", help="pack models' filter tables into a .npz")
    s.add_argument("hmms")
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(func=cmd_press)

    s = sub.add_parser("prepare", help="sort sequences by length and split them into batches")
    s.add_argument("seqs")
    s.add_argument("--outdir", required=True)
    s.add_argument("--meta", required=True, help="JSON with target and residue counts (Z)")
    s.add_argument("--batches", type=int, default=1)
    s.set_defaults(func=cmd_prepare)

    s = sub.add_parser("merge", help="merge per-batch hits into one tblout")
    s.add_argument("hits", nargs="+")
    s.add_argument("--tblout", required=True)
    s.add_argument("--merged-hits")
    s.add_argument("--stats")
    s.add_argument("--batch-stats", nargs="*", default=[])
    _add_z(s)
    s.add_argument("--bits-order", action="store_true", help="sort by score (bit thresholds) not E-value")
    s.set_defaults(func=cmd_merge)

    s = sub.add_parser("compare", help="compare a hits table with pyhmmer.hmmsearch")
    s.add_argument("hmms")
    s.add_argument("seqs")
    s.add_argument("--ours", required=True, help="hits table from search/merge")
    s.add_argument("--json", required=True)
    s.add_argument("--summary")
    s.add_argument("--cpus", type=int, default=0)
    s.add_argument("--require-recall", type=float, default=None)
    _add_thresholds(s)
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("devices", help="list OpenCL devices")
    s.add_argument("--check", action="store_true", help="also build a kernel on the chosen device (exit 1 if none)")
    s.add_argument("--device", default=None, help="device to check (default: auto)")
    s.set_defaults(func=cmd_devices)

    add_fetch_parser(sub)
    return p


def main(argv=None) -> int:
    from .device import DeviceError
    from .fetch import FetchError
    from .io import InputError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "prepare" and args.batches < 1:
        parser.error("--batches must be >= 1")
    try:
        return args.func(args)
    except (InputError, DeviceError, FetchError, ValueError, OSError) as exc:
        print(f"hmmcascade: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hmmcascade: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
