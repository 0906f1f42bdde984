"""Command line: ``hmmcascade {search,press,prepare,merge,compare,devices,fetch}``.

Every user mistake ends with one line ``hmmcascade: error: ...`` on stderr and
exit status 1 (2 for bad usage, also one line).  Numeric options take HMMER's
ranges.  Every output path is checked before any work starts, and a command's
outputs are put in place together, only when all are complete
(:mod:`hmmcascade.outfiles`); ``-`` is standard output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import numpy as np

from .cascade import Thresholds
from .io import InputError
from .outfiles import OutputError, OutputSet

__all__ = ["main"]


def _add_thresholds(p: argparse.ArgumentParser):
    """HMMER's threshold, filter and search-space options, in hmmsearch's help groups; returns the
    last group, "Other expert options" (-Z, --domZ), for a command's own expert options."""
    g = p.add_argument_group("Options controlling reporting thresholds")
    i = p.add_argument_group("Options controlling inclusion (significance) thresholds")
    cut = p.add_argument_group("Options controlling model-specific thresholding")
    x = g.add_mutually_exclusive_group()  # (-E, -T and the --cut_* options exclude each other, as HMMER's do)
    x.add_argument("-E", type=float, default=10.0, help="report targets with E-value <= E (default 10)")
    x.add_argument("-T", type=float, default=None, help="report targets with score >= T bits")
    for name, what in (("ga", "GA (gathering)"), ("nc", "NC (noise)"), ("tc", "TC (trusted)")):
        # (shown in their own group, exclusive with -E and -T: argparse's usage needs them right after -T)
        x._group_actions.append(cut.add_argument(f"--cut_{name}", action="store_true",
                                                 help=f"use each model's {what} cutoffs to set all thresholding"))
    g.add_argument("--domE", type=float, default=10.0, help="report domains with c-Evalue <= domE (default 10)")
    g.add_argument("--domT", type=float, default=None, help="report domains with score >= domT bits")
    i.add_argument("--incE", type=float, default=0.01, help="include targets with E-value <= incE (default 0.01)")
    i.add_argument("--incT", type=float, default=None, help="include targets with score >= incT bits")
    i.add_argument("--incdomE", type=float, default=0.01, help="include domains with c-Evalue <= incdomE (default 0.01)")
    i.add_argument("--incdomT", type=float, default=None, help="include domains with score >= incdomT bits")
    f = p.add_argument_group("Options controlling acceleration heuristics")
    f.add_argument("--max", action="store_true", help="turn off all filters (F1=F2=F3=1, no bias filter)")
    f.add_argument("--F1", type=float, default=0.02, help="MSV filter P-value threshold (default 0.02)")
    f.add_argument("--F2", type=float, default=1e-3, help="Viterbi filter P-value threshold (default 1e-3)")
    f.add_argument("--F3", type=float, default=1e-5, help="Forward filter P-value threshold (default 1e-5)")
    f.add_argument("--nobias", action="store_true", help="turn off the composition bias filter")
    e = p.add_argument_group("Other expert options")
    _add_z(e)
    e.add_argument("--domZ", type=float, default=None, help="domain search space (default: number of reported targets)")
    return e


def _add_z(group) -> None:
    group.add_argument("-Z", type=float, default=None, help="search space size for E-values (default: number of targets)")
    group.add_argument("--targets-from", metavar="META", default=None,
                       help="take Z from this prepare --meta JSON (the whole search's target count)")


def _read_json_file(path: str, what: str, key: str):
    """``key`` of a JSON file hmmcascade wrote (``what`` names the kind of file), or one line naming it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return data[key]
    except FileNotFoundError:
        raise InputError(f"{path}: {what} file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a {what} file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a {what} file (not JSON: {' '.join(str(exc).split())})") from None
    except (KeyError, TypeError):
        raise InputError(f"{path}: not a {what} file (no '{key}' entry)") from None


def _search_space(args, default: float | None = None) -> float | None:
    """Z: -Z, else the target count recorded by ``prepare``, else ``default``."""
    if args.Z is not None:
        return args.Z
    if args.targets_from:
        targets = _read_json_file(args.targets_from, "prepare --meta", "targets")
        if isinstance(targets, bool) or not isinstance(targets, int) or targets < 1:
            raise InputError(f"{args.targets_from}: not a prepare --meta file ('targets' is {targets!r}, "
                             "expected a positive count)")
        return float(targets)
    return default


#: HMMER's ranges for the numeric options (hmmsearch's option table): option -> (attribute, range).
#: "x>0": positive; "real": any real number; "0<x<=1": a P-value threshold; "n>=0", "n>=1": counts.
OPTION_RANGES = {
    "-E": ("E", "x>0"), "-T": ("T", "real"),
    "--domE": ("domE", "x>0"), "--domT": ("domT", "real"),
    "--incE": ("incE", "x>0"), "--incT": ("incT", "real"),
    "--incdomE": ("incdomE", "x>0"), "--incdomT": ("incdomT", "real"),
    "-Z": ("Z", "x>0"), "--domZ": ("domZ", "x>0"),
    "--F1": ("F1", "0<x<=1"), "--F2": ("F2", "0<x<=1"), "--F3": ("F3", "0<x<=1"),
    "--cpus": ("cpus", "n>=0"), "--cpu": ("cpu", "n>=0"), "--batches": ("batches", "n>=1"),
    "--hits-parts": ("hits_parts", "n>=1"),
    "--textw": ("textw", "n>=120"),
    "--require-recall": ("require_recall", "0<=x<=1"),
}


def check_option_ranges(args) -> None:
    """Refuse numeric options outside HMMER's ranges, as hmmsearch does (one line, the option named).

    NaN is refused everywhere (it would compare false with every score and report nothing), and
    infinity everywhere but the E-value thresholds, where it means "report everything".
    """
    for option, (attr, valid) in OPTION_RANGES.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        if valid.startswith("n"):
            if value < int(valid[3:]):
                raise ValueError(f"Option {option} takes integer arg in range {valid}; got {value}")
            continue
        finite = valid == "real" or option in ("-Z", "--domZ")
        ok = {"real": True, "x>0": value > 0, "0<x<=1": 0 < value <= 1, "0<=x<=1": 0 <= value <= 1}[valid]
        if not ok or math.isnan(value) or (finite and math.isinf(value)):
            kind = "finite real-valued arg" if finite else "real-valued arg"
            in_range = "" if valid == "real" else f" in range {valid}"
            raise ValueError(f"Option {option} takes {kind}{in_range}; got {value:g}"
                             + (f" ({option} must be in (0, 1])" if valid == "0<x<=1" else ""))


def _thresholds(args) -> Thresholds:
    cut = "ga" if args.cut_ga else "tc" if args.cut_tc else "nc" if args.cut_nc else None
    return Thresholds(F1=args.F1, F2=args.F2, F3=args.F3, bias_filter=not args.nobias, max_mode=args.max,
                      E=args.E, T=args.T, cut=cut, Z=_search_space(args), domE=args.domE, domT=args.domT,
                      incE=args.incE, incT=args.incT, incdomE=args.incdomE, incdomT=args.incdomT, domZ=args.domZ)


def _search_options(args):
    """The search's :class:`~hmmcascade.options.SearchOptions`, made once: ``$HMMCASCADE_OPTIONS``
    (the debug override), then ``--kernel-options``, then ``--cpu`` and ``--device-memory``."""
    from dataclasses import replace

    from .options import SearchOptions

    options = SearchOptions.from_env()
    if args.kernel_options:
        options = SearchOptions.parse(args.kernel_options, base=options)
    if args.cpu is not None:  # hmmsearch's --cpu 0: no workers, all in the main process
        options = replace(options, workers=max(args.cpu, 1))
    if args.device_memory is not None:
        options = replace(options, device_memory=args.device_memory)
    return options


def _add_outputs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("outputs (all optional; - is standard output)")
    _add_hmmer_tables(g)
    g.add_argument("--alignments", help="hmmsearch-style hit lists with domain tables and alignments (text)")
    _add_annotations(g)


def _add_hmmer_tables(g) -> None:
    g.add_argument("--tblout", help="HMMER's per-target table (hmmsearch --tblout)")
    g.add_argument("--domtblout", help="HMMER's per-domain table (hmmsearch --domtblout)")


def _add_annotations(g) -> None:
    g.add_argument("--pfamscan", help="per-protein domain table in pfam_scan.pl's columns")
    g.add_argument("--gff3", help="domains as GFF3 protein_match features")
    g.add_argument("--ipr-tsv", help="significant domains in InterProScan's TSV columns (analysis Pfam)")
    g.add_argument("--protein-summary", help="one line per protein: length, domains, architecture, clans")
    g.add_argument("--pfam-dat", help="Pfam-A.hmm.dat(.gz): family types, clans and nesting for --pfamscan/--gff3"
                                      " (enables pfam_scan's clan overlap resolution)")


_TABLE_OPTIONS = ("tblout", "domtblout", "alignments", "pfamscan", "gff3", "ipr_tsv", "protein_summary")


def _add_search_outputs(p: argparse.ArgumentParser) -> None:
    """search's outputs, as hmmsearch's "Options directing output" and then hmmcascade's own."""
    g = p.add_argument_group("Options directing output (- is standard output)")
    g.add_argument("-o", "--alignments", dest="alignments", metavar="FILE", default=None,
                   help="direct the main output (hmmsearch's text: hit lists, domain tables, alignments) to FILE, "
                        "not standard output; -o /dev/null: none")
    _add_hmmer_tables(g)
    g.add_argument("--pfamtblout", metavar="FILE", help="HMMER's table of hits and domains in Pfam's format "
                                                        "(hmmsearch --pfamtblout)")
    g.add_argument("--acc", action="store_true", help="prefer accessions over names in the main output")
    g.add_argument("--noali", action="store_true", help="don't output alignments, so the main output is smaller")
    w = g.add_mutually_exclusive_group()
    w.add_argument("--notextw", action="store_true", help="unlimit the main output's line width")
    w.add_argument("--textw", type=int, default=120, metavar="N",
                   help="max width of the main output's lines (default 120; N>=120)")
    a = p.add_argument_group("Annotation outputs (- is standard output)")
    _add_annotations(a)
    h = p.add_argument_group("hmmcascade's outputs")
    h.add_argument("--hits", help="write all hit records with domains and alignments, for merge: a Parquet hit file"
                                   " when the name ends in .parquet, else gzipped JSON")
    h.add_argument("--hits-parts", type=int, default=1, metavar="N",
                   help="--hits as a folder of N Parquet hit files (read as one by merge and compare), written "
                        "by N processes side by side (default 1: one file)")
    h.add_argument("--stats", help="write per-stage statistics (JSON) here")


#: search's output options besides the main output (-o), in the order they are written.
_SEARCH_OUTPUTS = ("tblout", "domtblout", "pfamtblout", "pfamscan", "gff3", "ipr_tsv", "protein_summary", "hits",
                   "stats")


def _search_outputs(args) -> dict[str, str | None]:
    """``{option: path}`` of search's outputs; the main output on standard output unless -o names a file.

    Raises:
        ValueError: two outputs on standard output (one line; hmmsearch's -o FILE is the way out).
    """
    from .outfiles import STDOUT

    paths = {"-o": args.alignments or STDOUT, **_outputs(args, *_SEARCH_OUTPUTS)}
    on_stdout = [option for option, path in paths.items() if path == STDOUT]
    if len(on_stdout) > 1:
        raise ValueError(f"standard output (-) takes one output, not {' and '.join(on_stdout)}"
                         + (" (the main output goes there unless -o FILE, or -o /dev/null for none, is given)"
                            if "-o" in on_stdout and not args.alignments else ""))
    return paths


def _main_output_settings(args) -> list[str]:
    """hmmsearch's ``output_header`` lines for the options given, for the main output's head."""
    th = [(args.alignments, "# output directed to file:         %s", args.alignments),
          (args.tblout, "# per-seq hits tabular output:     %s", args.tblout),
          (args.domtblout, "# per-dom hits tabular output:     %s", args.domtblout),
          (args.pfamtblout, "# pfam-style tabular hit output:   %s", args.pfamtblout),
          (args.acc, "# prefer accessions over names:    yes", None),
          (args.noali, "# show alignments in output:       no", None),
          (args.notextw, "# max ASCII text line length:      unlimited", None),
          (args.textw != 120, "# max ASCII text line length:      %d", args.textw),
          (args.E != 10.0, "# sequence reporting threshold:    E-value <= %g", args.E),
          (args.T is not None, "# sequence reporting threshold:    score >= %g", args.T),
          (args.domE != 10.0, "# domain reporting threshold:      E-value <= %g", args.domE),
          (args.domT is not None, "# domain reporting threshold:      score >= %g", args.domT),
          (args.incE != 0.01, "# sequence inclusion threshold:    E-value <= %g", args.incE),
          (args.incT is not None, "# sequence inclusion threshold:    score >= %g", args.incT),
          (args.incdomE != 0.01, "# domain inclusion threshold:      E-value <= %g", args.incdomE),
          (args.incdomT is not None, "# domain inclusion threshold:      score >= %g", args.incdomT),
          (args.cut_ga, "# model-specific thresholding:     GA cutoffs", None),
          (args.cut_nc, "# model-specific thresholding:     NC cutoffs", None),
          (args.cut_tc, "# model-specific thresholding:     TC cutoffs", None),
          (args.max, "# Max sensitivity mode:            on [all heuristic filters off]", None),
          (args.F1 != 0.02, "# MSV filter P threshold:       <= %g", args.F1),
          (args.F2 != 1e-3, "# Vit filter P threshold:       <= %g", args.F2),
          (args.F3 != 1e-5, "# Fwd filter P threshold:       <= %g", args.F3),
          (args.nobias, "# biased composition HMM filter:   off", None),
          (args.Z is not None, "# sequence search space set to:    %.0f", args.Z),
          (args.domZ is not None, "# domain search space set to:      %.0f", args.domZ)]
    return [line if value is None else line % value for given, line, value in th if given]


def _load_input(load, path: str):
    """``load(path)``, where ``-`` is standard input: its bytes (gzipped or not) go to a temporary
    file first, which errors name as ``- (standard input)``."""
    if path != "-":
        return load(path)
    import shutil
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix="hmmcascade-stdin.")
    try:
        with os.fdopen(fd, "wb") as fh:
            shutil.copyfileobj(sys.stdin.buffer, fh, 1 << 22)
        try:
            return load(tmp)
        except InputError as exc:
            raise InputError(str(exc).replace(tmp, "- (standard input)")) from None
    finally:
        os.unlink(tmp)


def _outputs(args, *names: str) -> dict[str, str | None]:
    """``{--option: path}`` of the command's output options ``names`` (None where not given)."""
    return {"--" + name.replace("_", "-"): getattr(args, name, None) for name in names}


def _write_outputs(args, paths, hits, th: Thresholds, Z: float, db=None, query_file=None, target_file=None,
                   families=None, seqs=None) -> None:
    """search's outputs (``paths``: :func:`_search_outputs`'), the main output first."""
    from .output import query_infos, write_alignments, write_domtblout, write_pfamtblout, write_tblout

    queries = query_infos(db) if db is not None else None
    inc_by_E = th.cut is None and th.incT is None
    command = "hmmcascade " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    common = dict(Z=Z, queries=queries, inc_by_E=inc_by_E, query_file=query_file, target_file=target_file)
    if paths["-o"] != os.devnull:  # (-o /dev/null: no main output, none made)
        write_alignments(paths["-o"], hits, domZ=th.domZ, textw=0 if args.notextw else args.textw,
                         show_alignments=not args.noali, show_accessions=args.acc,
                         settings=_main_output_settings(args), **common)
    if args.tblout:
        write_tblout(args.tblout, hits, command=command, **common)
    if args.domtblout:
        write_domtblout(args.domtblout, hits, domZ=th.domZ, command=command, **common)
    if args.pfamtblout:
        write_pfamtblout(args.pfamtblout, hits, command=command, **common)
    if args.pfamscan or args.gff3 or args.ipr_tsv or args.protein_summary:
        from .annotate import (sequence_md5s, write_gff3, write_interproscan_tsv, write_pfam_scan,
                               write_protein_summary)

        reported = [h for h in hits if h.reported]
        if args.pfamscan:
            write_pfam_scan(args.pfamscan, reported, families)
        if args.gff3:
            write_gff3(args.gff3, reported, families)
        if args.ipr_tsv:
            descriptions = {q.name: q.description for q in queries} if queries else None
            write_interproscan_tsv(args.ipr_tsv, reported, families, md5s=sequence_md5s(seqs) if seqs else None,
                                   descriptions=descriptions)
        if args.protein_summary:
            write_protein_summary(args.protein_summary, reported, families)


def _read_families(args):
    """The --pfam-dat file's families, or None (read before the search, so a bad file fails at once)."""
    if not args.pfam_dat:
        return None
    from .annotate import read_pfam_dat

    return read_pfam_dat(args.pfam_dat)


def _shard_arg(text: str) -> tuple[int, int]:
    """``K/N`` (1 <= K <= N) as (K, N), for argparse."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def _load_models(path: str):
    """The ProfileDB of a pressed file, or of a model file read and pressed (large text files in
    parallel, :func:`~hmmcascade.profiles.press_file`)."""
    from .profiles import ProfileDB, press_file

    if path.endswith(".npz") or ProfileDB.is_mapped(path):
        return ProfileDB.load(path)
    return press_file(path)


def _load_seqs(path: str):
    from .io import SequenceSet, read_sequences

    if path.endswith(".npz"):
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
    outputs = OutputSet({"--output": args.output}, inputs=[args.hmms])
    db = _load_models(args.hmms)
    with outputs:
        db.save(args.output)
    print(f"pressed {len(db)} models ({db.nodes} nodes) into {args.output}", file=sys.stderr)
    return 0


def cmd_prepare(args) -> int:
    """Sort sequences by length and split them into batches of similar total residues."""
    from .outfiles import output_folder
    from .output import write_json

    outdir = output_folder(args.outdir)
    n = args.batches
    batch_paths = [outdir / f"batch{b:03d}.npz" for b in range(n)]
    outputs = OutputSet({"--meta": args.meta, **{f"batch {b}": path for b, path in enumerate(batch_paths)}},
                        inputs=[args.seqs])
    seqs = _load_seqs(args.seqs)
    order = np.argsort(seqs.lengths, kind="stable")
    cum = np.cumsum(seqs.lengths[order].astype(np.int64))
    cuts = [0] + [int(np.searchsorted(cum, cum[-1] * b / n)) for b in range(1, n)] + [len(order)]
    with outputs:
        for b, path in enumerate(batch_paths):
            seqs.subset(order[cuts[b]:cuts[b + 1]]).save(path)
        write_json(args.meta, {"source": args.seqs, "targets": len(seqs), "residues": seqs.total_residues,
                               "batches": n, "max_length": int(seqs.lengths.max())})
    print(f"prepared {len(seqs)} sequences in {n} length-sorted batches under {outdir}", file=sys.stderr)
    return 0


def cmd_search(args) -> int:
    from . import builds, cascade, device
    from .output import pipeline_summary, progress_printer, write_json
    from .columnar import write_hit_file
    from .results import reported_counts, save_hits

    started_at = time.time()
    th = _thresholds(args)
    options = _search_options(args)
    if args.hmms == args.seqs == "-":
        raise ValueError("the model file or the sequence file may be - (standard input), not both")
    paths = _search_outputs(args)
    folder = args.hits if args.hits and args.hits_parts > 1 else None  # (put in place by write_hit_file)
    if folder is not None and not str(folder).endswith(".parquet"):
        raise ValueError(f"{folder}: --hits-parts writes a folder of Parquet hit files; name it *.parquet")
    outputs = OutputSet({k: v for k, v in paths.items() if k != "--hits" or folder is None},
                        inputs=[path for path in (args.hmms, args.seqs) if path != "-"])
    families = _read_families(args)
    dev = device.open_device(args.device, options)
    builds.start_workers(dev)  # (a cold machine: the kernel builds' processes start while the inputs load)
    db = _load_input(_load_models, args.hmms)
    models, first = db, 0
    if args.model_shard:  # (a shard of the models: its hits' model numbers are made the whole file's again)
        k, n = args.model_shard
        try:
            first, stop = db.shard(k, n)
        except ValueError as exc:
            raise InputError(f"{args.hmms}: {exc}") from None
        db = db.subset(first, stop)
    seqs = _load_input(_load_seqs, args.seqs)
    print(f"# hmmcascade search: {len(db)} models x {len(seqs)} targets on {dev.name}", file=sys.stderr, flush=True)
    progress = None if args.quiet else progress_printer(every_s=10.0, nodes=db.nodes)
    with progress or contextlib.nullcontext():  # (a line at least every 10 s in a log, a bar on a terminal)
        if progress is not None:
            progress(0, seqs.total_residues)
        res = cascade.search(db, seqs, dev, th, progress=progress, options=options,
                             alignment_text=bool(args.hits or (paths["-o"] != os.devnull and not args.noali)))
    searched_at = time.time()
    for h in res.records if first else ():
        h.model += first
    db = models
    stats = {**res.stats.as_dict(), "first_model": first}
    with outputs:
        _write_outputs(args, paths, res.records, th, res.Z, db, args.hmms, args.seqs, families=families, seqs=seqs)
        meta = {"Z": res.Z, "models": len(db), "targets": len(seqs)}
        if args.hits and folder is None:
            if str(args.hits).endswith(".parquet"):
                write_hit_file(args.hits, res.records, meta)
            else:
                save_hits(args.hits, res.records, meta)
        if args.stats:  # (started_at/finished_at: this process's search, seconds since the epoch)
            write_json(args.stats, {"Z": res.Z, "device": res.device, "stats": stats, "started_at": started_at,
                                    "finished_at": time.time()})
        if folder is not None:  # (last: the folder is put in place whole when written)
            write_hit_file(folder, res.records, meta, parts=args.hits_parts)
    print(pipeline_summary(stats, res.Z, res.device, th), file=sys.stderr)
    n_rep, n_dom = reported_counts(res.records)
    print(f"# {n_rep} reported hits, {n_dom} reported domains", file=sys.stderr)
    print(f"# {searched_at - started_at:.1f} s to the search's end, {time.time() - searched_at:.1f} s writing; "
          f"peak host memory {_peak_rss_mb():,.0f} MB", file=sys.stderr)
    return 0


def _peak_rss_mb() -> float:
    """This process's peak resident memory in MB (Linux's ru_maxrss is in KB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cmd_merge(args) -> int:
    """Merge the search jobs' hits, apply the thresholds of the whole search (Z, domZ), write the
    outputs; streamed a block of models at a time (:mod:`hmmcascade.merge`).  With ``--to-parts``,
    one shard of the models into a folder; with ``--from-parts``, the outputs from those folders."""
    from .annotate import thresholds_note
    from .cascade import StageStats
    from .merge import merge_hit_files, merge_parts, open_hit_source
    from .output import query_infos, write_json

    th = _thresholds(args)
    Z = _search_space(args)
    if Z is None:
        raise ValueError("merge needs the search space: -Z or --targets-from")
    if bool(args.hits) == bool(args.from_parts):
        raise ValueError("merge takes hit files or --from-parts folders (one of them)")
    workers = max(1, len(os.sched_getaffinity(0)) if args.cpu is None else args.cpu)
    db = _load_models(args.models) if args.models else None
    queries = query_infos(db) if db is not None else None
    if args.to_parts:
        return _merge_to_parts(args, th, Z, db, queries, workers)
    if args.model_shard:
        raise ValueError("--model-shard merges one shard of the models, with --to-parts")
    inputs = [*args.hits, *args.from_parts, *args.batch_stats, *args.seqs, *([args.models] if args.models else [])]
    # (from parts, the merged hits are a folder of the parts' hit files, put in place by the merge)
    outputs = OutputSet(_outputs(args, *_TABLE_OPTIONS, *([] if args.from_parts else ["merged_hits"]), "stats"),
                        inputs=inputs)
    families = _read_families(args)
    if not families and any(getattr(args, k, None) for k in ("pfamscan", "gff3", "ipr_tsv", "protein_summary")):
        print("# per-protein tables without --pfam-dat: no family types or clans, clan overlaps not resolved",
              file=sys.stderr)
    annotation = {"note": thresholds_note(th, Z), "significant_only": args.significant_only}
    batches = [_read_json_file(path, "search --stats", "stats") for path in args.batch_stats]
    sources = [open_hit_source(path) for path in args.hits]  # (each checked before any output is written)
    command = "hmmcascade " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    with outputs:
        md5s = None
        if args.ipr_tsv and args.seqs:
            from .annotate import sequence_md5s

            md5s = sequence_md5s([_load_seqs(path) for path in args.seqs])
        paths = {name: getattr(args, name, None) for name in (*_TABLE_OPTIONS, "merged_hits")}
        if paths["merged_hits"] and not str(paths["merged_hits"]).endswith(".parquet"):
            raise ValueError(f"{paths['merged_hits']}: --merged-hits writes a Parquet hit file; name it *.parquet")
        descriptions = {q.name: q.description for q in queries} if queries else None
        if args.from_parts:
            summary = merge_parts(args.from_parts, Z, outputs=paths, families=families, md5s=md5s,
                                  descriptions=descriptions, command=command, workers=workers,
                                  n_models=len(queries) if queries is not None else None,
                                  remove=args.remove_parts, annotation=annotation)
        else:
            summary = merge_hit_files(sources, th, Z, queries=queries, outputs=paths, families=families, md5s=md5s,
                                      descriptions=descriptions, command=command, workers=workers,
                                      annotation=annotation)
        if args.stats:
            try:
                total = StageStats.combine_batches(batches).as_dict() if batches else {}
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(f"{' '.join(args.batch_stats)}: not search --stats files "
                                 f"(the per-stage statistics lack {exc})") from None
            write_json(args.stats, {"Z": Z, "stats": total})
    what = f"{len(args.from_parts)} parts" if args.from_parts else f"{len(args.hits)} hit files"
    print(f"merged {what} ({summary.hits} hits, {summary.blocks} blocks of models, "
          f"{summary.runs} sorted runs of proteins): {summary.reported} reported hits; models' tables "
          f"{summary.step1_s:.1f} s, proteins' tables {summary.step2_s:.1f} s", file=sys.stderr)
    return 0


def _merge_to_parts(args, th, Z: float, db, queries, workers: int) -> int:
    """``merge --to-parts DIR``: the tables' text, merged hit rows and per-protein runs of one shard
    of the models (``--model-shard``; every model without it) into DIR, for ``merge --from-parts``."""
    from .merge import merge_hit_files, open_hit_source

    given = [o for o, path in _outputs(args, *_TABLE_OPTIONS, "merged_hits", "stats").items() if path]
    if given:
        raise ValueError(f"merge --to-parts writes its folder alone; {given[0]} belongs to merge --from-parts")
    if queries is None:
        raise ValueError("merge --to-parts needs --models (the shard's models and their names)")
    if not args.seqs:
        raise ValueError("merge --to-parts needs --seqs (every searched sequence: the parts' cuts of their names)")
    first, stop = 0, len(queries)
    if args.model_shard:
        k, n = args.model_shard
        try:
            first, stop = db.shard(k, n)
        except ValueError as exc:
            raise InputError(f"{args.models}: {exc}") from None
    names = [name for path in args.seqs for name in _load_seqs(path).names]
    sources = [open_hit_source(path) for path in args.hits]
    command = "hmmcascade " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    summary = merge_hit_files(sources, th, Z, queries=queries, outputs={}, command=command, workers=workers,
                              model_range=(first, stop), parts_dir=args.to_parts, names=names)
    print(f"merged {len(args.hits)} hit files of models {first}-{stop} into {args.to_parts} ({summary.hits} hits, "
          f"{summary.blocks} blocks): {summary.reported} reported hits in {summary.step1_s:.1f} s", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    """pyhmmer on the same inputs and thresholds, against our hits.  ``--save-reference``: only run
    pyhmmer (on the planned models) and save its hits; ``--reference``: compare with saved hits."""
    from .compare import (compare_hits, compared_rows, load_reference, plan_compare, reference_hits, run_pyhmmer,
                          save_reference, summary_text, write_rows)
    from .io import read_hmm_sample
    from .outfiles import write_text
    from .merge import open_hit_source
    from .output import write_json

    th = _thresholds(args)
    if args.save_reference and (args.ours or args.reference or args.json or args.summary or args.rows):
        raise ValueError("compare --save-reference runs pyhmmer alone: no --ours, --reference, --json, --summary "
                         "or --rows")
    if not args.save_reference and not (args.ours and args.json):
        raise ValueError("compare needs --ours and --json (or --save-reference)")
    inputs = [args.hmms, args.seqs, *([args.ours] if args.ours else []), *(args.search_stats or []),
              *([args.reference] if args.reference else [])]
    outputs = OutputSet(_outputs(args, "json", "summary", "rows", "save_reference"), inputs=inputs)
    source = open_hit_source(args.ours) if args.ours else None  # (read only for the models compared)
    if args.reference:
        try:
            ref, plan, Z = load_reference(args.reference)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        names = set(plan.get("names") or [])
    else:
        max_seconds = args.max_seconds
        if max_seconds is None:
            max_seconds = 300.0
            if args.search_stats:
                wall = 0.0
                for path in args.search_stats:
                    w = _read_json_file(path, "search --stats", "stats").get("wall_s")
                    if not isinstance(w, (int, float)) or w < 0:
                        raise InputError(f"{path}: not a search --stats file (no search seconds)")
                    wall += float(w)
                max_seconds = args.max_fraction * wall * args.search_scale
        seqs = _load_seqs(args.seqs)
        Z = th.Z if th.Z is not None else float(len(seqs))
        plans = []
        cpus = args.cpus or os.cpu_count() or 1

        def choose(lengths):  # (only the models compared are parsed)
            plans.append(plan_compare(lengths, seqs.total_residues, args.plan_cpus or cpus, max_seconds,
                                      args.mode, args.seed, args.sample_models))
            return plans[0]["models"].tolist()

        hmms, _ = read_hmm_sample(args.hmms, choose)
        plan = plans[0]
        names = {h.name for h in hmms} if plan["mode"] == "sample" else set()
        plan["names"] = sorted(names)
        ref = reference_hits(run_pyhmmer(hmms, seqs, th, Z, cpus=args.cpus))  # (made once: compared, saved, rows)
        if args.save_reference:
            with outputs:
                save_reference(args.save_reference, ref, plan, Z)
            print(f"pyhmmer: {len(ref)} reported hits of {len(plan['models'])} models saved to "
                  f"{args.save_reference}", file=sys.stderr)
            return 0
    if plan["mode"] == "sample":  # (each model on its own: at the whole search's Z, its rows are the full search's)
        ours = [h for m in plan["models"].tolist() for h in source.read_models(m, m + 1) if h.model_name in names]
    else:
        ours = source.read_models(0, source.last_model + 1)
    result = compare_hits(ours, ref)
    result["Z"] = Z
    result["sample"] = None if plan["mode"] == "full" else {
        "models": len(plan["models"]), "models_total": plan["models_total"], "seed": plan["seed"],
        "max_seconds": plan["max_seconds"], "estimated_s": plan["estimated_s"],
        "sample_estimated_s": plan["sample_estimated_s"], "names": sorted(names)}
    text = summary_text(result)
    with outputs:
        write_json(args.json, result)
        if args.summary:
            write_text(args.summary, text + "\n")
        if args.rows:
            write_rows(args.rows, compared_rows(ours, ref))
    print(text, file=sys.stderr)
    if args.require_recall is not None and result["recall"] < args.require_recall:
        raise ValueError(f"recall {result['recall']:.4f} below the required {args.require_recall}")
    if args.require_identical and not (result["recall"] == result["precision"] == 1.0
                                       and result["included_identical"]
                                       and result["domains_unmatched_count"] == result["domains_extra_count"] == 0):
        raise ValueError("hits or domains differ from pyhmmer's (see the comparison JSON)")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (``PROG: error: what (see PROG --help)``), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .fetch import add_fetch_parser

    p = _Parser(prog="hmmcascade", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"hmmcascade {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("search", add_help=False, usage="hmmcascade search [options] HMMS SEQS",
                       help="search models against sequences (MSV -> Viterbi -> Forward), as hmmsearch: its text "
                            "on standard output",
                       description="Search profile(s) against a sequence database, as hmmsearch does: its main "
                                   "output on standard output (or -o FILE), progress and summary on standard error.")
    s.add_argument("hmms", help="HMMER3 models (text/binary, .gz ok) or pressed models (hmmcascade press); "
                                "- reads standard input")
    s.add_argument("seqs", help="protein FASTA (.gz ok) or a prepared .npz batch; - reads standard input")
    b = s.add_argument_group("Basic options")
    b.add_argument("-h", "--help", action="help", help="show this help and exit")
    _add_search_outputs(s)
    expert = _add_thresholds(s)
    expert.add_argument("--cpu", type=int, default=None, metavar="N",
                        help="host worker processes for the domain work left to the host (default: one per CPU; "
                             "0: none, in this process)")
    r = s.add_argument_group("hmmcascade's device and run options")
    r.add_argument("--device", default=None, help="auto (default), gpu, cpu, P:D, or a name substring")
    r.add_argument("--quiet", action="store_true", help="no progress on standard error (a bar on a terminal, "
                                                        "else a line at least every 10 s)")
    r.add_argument("--model-shard", metavar="K/N", type=_shard_arg, default=None,
                   help="search shard K of N of the models (consecutive models, even in nodes); hit records "
                        "keep the whole file's model numbers, so a merge of every shard's equals one search")
    r.add_argument("--device-memory", metavar="SIZE", default=None,
                   help="device-memory budget of the search, e.g. 40G or 512M (default: 85%% of a GPU's memory, "
                        "50%% of a CPU device's); launches and batches are sized to keep within it")
    r.add_argument("--kernel-options", metavar="KEY=VALUE[,KEY=VALUE]", default=None,
                   help="expert: kernel variants and tunables (hmmcascade.options.SearchOptions: msv, viterbi, "
                        "forward, forward_wg_cells, decode, envelope, region_forward, ensemble, null2, select, "
                        "side_queue, inline_ptx, workers, device_memory; each 'auto' by default); over $HMMCASCADE_OPTIONS")
    s.set_defaults(func=cmd_search)

    s = sub.add_parser("press", help="pack models' filter tables for the kernels: mapped (loads at once), "
                                     "or a .npz where the output's name ends so")
    s.add_argument("hmms")
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(func=cmd_press)

    s = sub.add_parser("prepare", help="sort sequences by length and split them into batches")
    s.add_argument("seqs")
    s.add_argument("--outdir", required=True)
    s.add_argument("--meta", required=True, help="JSON with target and residue counts (Z)")
    s.add_argument("--batches", type=int, default=1)
    s.set_defaults(func=cmd_prepare)

    s = sub.add_parser("merge", help="merge per-batch hits; threshold; write tables, alignments, annotations")
    s.add_argument("hits", nargs="*", help="hit files from search --hits (Parquet, or gzipped JSON)")
    s.add_argument("--models", help="the searched models (.npz or HMM file): query order and names in the tables")
    s.add_argument("--to-parts", metavar="DIR",
                   help="merge one shard of the models (--model-shard; every hit file of its models) into the "
                        "folder DIR: its tables' text, merged hits and per-protein runs, for --from-parts")
    s.add_argument("--model-shard", metavar="K/N", type=_shard_arg, default=None,
                   help="with --to-parts: shard K of N of the models, as search --model-shard")
    s.add_argument("--from-parts", nargs="+", default=[], metavar="DIR",
                   help="the outputs from the folders of merge --to-parts (every shard's, in model order) "
                        "instead of hit files")
    s.add_argument("--remove-parts", action="store_true",
                   help="with --from-parts: remove each file of the folders once used (the disk holds the outputs "
                        "and little more; after a failed merge, make the parts again)")
    s.add_argument("--merged-hits", help="write the merged, thresholded hit records here (a Parquet hit file, *.parquet;"
                                          " with --from-parts a folder of them, one per part)")
    s.add_argument("--stats")
    s.add_argument("--batch-stats", nargs="*", default=[])
    s.add_argument("--cpu", type=int, default=None, metavar="N",
                   help="processes formatting blocks of models (default: the CPUs this process may use; 0 or 1: none)")
    s.add_argument("--seqs", nargs="*", default=[], help="the searched sequences (FASTA or prepared batches): "
                                                          "their MD5s for --ipr-tsv")
    s.add_argument("--significant-only", action="store_true",
                   help="--pfamscan, --gff3, --protein-summary: only significant domains (pfam_scan's significance 1:"
                        " the family's gathering thresholds with --pfam-dat, else HMMER's inclusion), as pfam_scan"
                        " lists them; default: every reported domain")
    _add_outputs(s)
    _add_thresholds(s)
    s.set_defaults(func=cmd_merge)

    s = sub.add_parser("compare", help="compare a hits table with pyhmmer.hmmsearch")
    s.add_argument("hmms")
    s.add_argument("seqs")
    s.add_argument("--ours", help="hit records from search --hits or merge --merged-hits")
    s.add_argument("--require-identical", action="store_true",
                   help="exit 1 unless hits, included hits and domains all match pyhmmer's")
    s.add_argument("--json", help="the comparison (required unless --save-reference)")
    s.add_argument("--summary", help="the comparison in words")
    s.add_argument("--rows", help="the scores of every row both report, sequences and domains (TSV)")
    s.add_argument("--save-reference", metavar="FILE",
                   help="only run pyhmmer on the planned models and save its hits (gzipped JSON) for --reference")
    s.add_argument("--reference", metavar="FILE",
                   help="pyhmmer's hits saved by --save-reference (its plan, models and Z) instead of running it")
    s.add_argument("--cpus", type=int, default=0, help="pyhmmer's threads (0: one per CPU)")
    s.add_argument("--plan-cpus", type=int, default=0,
                   help="the threads the sample's time budget is planned for (default: --cpus)")
    s.add_argument("--require-recall", type=float, default=None)
    s.add_argument("--mode", choices=("full", "sample", "auto"), default="full",
                   help="full (default): every model; sample: a seeded sample of the models against every target, "
                        "within --max-seconds of pyhmmer's estimated time; auto: full if that fits, else a sample")
    s.add_argument("--max-seconds", type=float, default=None,
                   help="pyhmmer's time budget for sample/auto (default: --max-fraction of the search's seconds "
                        "in --search-stats, else 300)")
    s.add_argument("--max-fraction", type=float, default=0.05,
                   help="the budget as a fraction of the search's seconds (default 0.05)")
    s.add_argument("--search-stats", nargs="+", default=None,
                   help="the search jobs' --stats (or merge's) JSON: their seconds, summed")
    s.add_argument("--search-scale", type=float, default=1.0,
                   help="the search's seconds are the stats' sum times this (stats of one of N model shards: N)")
    s.add_argument("--sample-models", type=int, default=None, help="sample this many models (seeded)")
    s.add_argument("--seed", type=int, default=1, help="the sample's seed (default 1)")
    _add_thresholds(s)
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("devices", help="list OpenCL devices")
    s.add_argument("--check", action="store_true", help="also build a kernel on the chosen device (exit 1 if none)")
    s.add_argument("--device", default=None, help="device to check (default: auto)")
    s.set_defaults(func=cmd_devices)

    add_fetch_parser(sub)
    return p


def _error_line(exc: BaseException) -> str:
    """A user-facing error on one line; an OSError as ``FILE: what is wrong``."""
    if isinstance(exc, OSError) and not isinstance(exc, OutputError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return " ".join(str(exc).split())


class _Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler or Snakemake cancelling the job), handled as Ctrl-C: outputs dropped, exit 143."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv=None) -> int:
    from .device import DeviceError
    from .fetch import FetchError

    parser = build_parser()
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _in_main_thread() else None
    try:
        check_option_ranges(args)
        return args.func(args)
    except (InputError, DeviceError, FetchError, ValueError, OSError) as exc:
        print(f"hmmcascade: error: {_error_line(exc)}", file=sys.stderr)
        return 1
    except _Terminated:
        print("hmmcascade: terminated", file=sys.stderr)
        return 143
    except Exception as exc:  # the OpenCL runtime's errors (out of device memory, a lost device): one line too
        if not type(exc).__module__.startswith("pyopencl"):
            raise
        print(f"hmmcascade: error: OpenCL device: {_error_line(exc)}{_where(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hmmcascade: interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _where(exc: BaseException, depth: int = 3) -> str:
    """`` (at FILE:LINE in FUNCTION < ...)``: the ``depth`` innermost frames of this package that
    the error passed through, innermost first (the wait or launch that failed, and the stage that
    made it), or ''."""
    import os
    import traceback

    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename).startswith(here)]
    if not frames:
        return ""
    return " (at " + " < ".join(f"{os.path.relpath(f.filename, here)}:{f.lineno} in {f.name}"
                                for f in reversed(frames[-depth:])) + ")"


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    sys.exit(main())
