"""The commands that read search's hit files: ``hmmcascade merge`` (the search jobs' hits merged
and thresholded for the whole search, its tables written) and ``hmmcascade compare`` (hits compared
with pyhmmer's); their parsers are added to :func:`hmmcascade.cli.build_parser`'s."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from .cli_common import (add_annotations, add_hmmer_tables, add_thresholds, load_models, load_seqs, option_paths,
                         read_families, read_json_file, search_space, shard_arg, thresholds)
from .io import InputError
from .outfiles import OutputSet


def add_merge_parser(sub) -> argparse.ArgumentParser:
    """Adds the ``merge`` subcommand to ``sub`` (``add_subparsers()``'s object); returns its parser
    (``func``: :func:`cmd_merge`)."""
    s = sub.add_parser("merge", help="merge per-batch hits; threshold; write tables, alignments, annotations")
    s.add_argument("hits", nargs="*", help="hit files from search --hits (Parquet, or gzipped JSON)")
    s.add_argument("--models", help="the searched models (.npz or HMM file): query order and names in the tables")
    s.add_argument("--to-parts", metavar="DIR",
                   help="merge one shard of the models (--model-shard; every hit file of its models) into the "
                        "folder DIR: its tables' text, merged hits and per-protein runs, for --from-parts")
    s.add_argument("--model-shard", metavar="K/N", type=shard_arg, default=None,
                   help="with --to-parts: shard K of N of the models, as search --model-shard")
    s.add_argument("--no-protein-runs", action="store_true",
                   help="with --to-parts: no per-protein runs (no --seqs needed); --from-parts then writes HMMER's "
                        "tables and the merged hits, not --pfamscan, --gff3, --ipr-tsv or --protein-summary (a genome "
                        "run's per-protein tables are split-genomes')")
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
    add_thresholds(s)
    s.set_defaults(func=cmd_merge)
    return s


def _add_outputs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("outputs (all optional; - is standard output)")
    add_hmmer_tables(g)
    g.add_argument("--alignments", help="hmmsearch-style hit lists with domain tables and alignments (text)")
    add_annotations(g)


_TABLE_OPTIONS = ("tblout", "domtblout", "alignments", "pfamscan", "gff3", "ipr_tsv", "protein_summary")


def cmd_merge(args) -> int:
    """Merge the search jobs' hits, apply the thresholds of the whole search (Z, domZ), write the
    outputs; streamed a block of models at a time (:mod:`hmmcascade.merge`).  With ``--to-parts``,
    one shard of the models into a folder; with ``--from-parts``, the outputs from those folders."""
    from .annotate import thresholds_note
    from .search_result import StageStats
    from .merge import merge_hit_files, merge_parts, open_hit_source
    from .output import query_infos, write_json

    th = thresholds(args)
    Z = search_space(args)
    if Z is None:
        raise ValueError("merge needs the search space: -Z or --targets-from")
    if bool(args.hits) == bool(args.from_parts):
        raise ValueError("merge takes hit files or --from-parts folders (one of them)")
    workers = max(1, len(os.sched_getaffinity(0)) if args.cpu is None else args.cpu)
    db = load_models(args.models) if args.models else None
    queries = query_infos(db) if db is not None else None
    if args.to_parts:
        return _merge_to_parts(args, th, Z, db, queries, workers)
    if args.model_shard:
        raise ValueError("--model-shard merges one shard of the models, with --to-parts")
    if args.no_protein_runs:
        raise ValueError("--no-protein-runs merges one shard of the models, with --to-parts")
    inputs = [*args.hits, *args.from_parts, *args.batch_stats, *args.seqs, *([args.models] if args.models else [])]
    # (from parts, the merged hits are a folder of the parts' hit files, put in place by the merge)
    outputs = OutputSet(option_paths(args, *_TABLE_OPTIONS, *([] if args.from_parts else ["merged_hits"]), "stats"),
                        inputs=inputs)
    families = read_families(args)
    if not families and any(getattr(args, k, None) for k in ("pfamscan", "gff3", "ipr_tsv", "protein_summary")):
        print("# per-protein tables without --pfam-dat: no family types or clans, clan overlaps not resolved",
              file=sys.stderr)
    annotation = {"note": thresholds_note(th, Z), "significant_only": args.significant_only}
    batches = [read_json_file(path, "search --stats", "stats") for path in args.batch_stats]
    sources = [open_hit_source(path) for path in args.hits]  # (each checked before any output is written)
    command = "hmmcascade " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    with outputs:
        md5s = None
        if args.ipr_tsv and args.seqs:
            from .annotate import sequence_md5s

            md5s = sequence_md5s([load_seqs(path) for path in args.seqs])
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

    given = [o for o, path in option_paths(args, *_TABLE_OPTIONS, "merged_hits", "stats").items() if path]
    if given:
        raise ValueError(f"merge --to-parts writes its folder alone; {given[0]} belongs to merge --from-parts")
    if queries is None:
        raise ValueError("merge --to-parts needs --models (the shard's models and their names)")
    if not args.seqs and not args.no_protein_runs:
        raise ValueError("merge --to-parts needs --seqs (every searched sequence: the parts' cuts of their names)")
    first, stop = 0, len(queries)
    if args.model_shard:
        k, n = args.model_shard
        try:
            first, stop = db.shard(k, n)
        except ValueError as exc:
            raise InputError(f"{args.models}: {exc}") from None
    names = None if args.no_protein_runs else [name for path in args.seqs for name in load_seqs(path).names]
    sources = [open_hit_source(path) for path in args.hits]
    command = "hmmcascade " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    summary = merge_hit_files(sources, th, Z, queries=queries, outputs={}, command=command, workers=workers,
                              model_range=(first, stop), parts_dir=args.to_parts, names=names,
                              protein_runs=not args.no_protein_runs)
    print(f"merged {len(args.hits)} hit files of models {first}-{stop} into {args.to_parts} ({summary.hits} hits, "
          f"{summary.blocks} blocks): {summary.reported} reported hits in {summary.step1_s:.1f} s", file=sys.stderr)
    return 0


def add_compare_parser(sub) -> argparse.ArgumentParser:
    """Adds the ``compare`` subcommand to ``sub`` (``add_subparsers()``'s object); returns its parser
    (``func``: :func:`cmd_compare`)."""
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
    add_thresholds(s)
    s.set_defaults(func=cmd_compare)
    return s


def cmd_compare(args) -> int:
    """pyhmmer on the same inputs and thresholds, against our hits.  ``--save-reference``: only run
    pyhmmer (on the planned models) and save its hits; ``--reference``: compare with saved hits."""
    from .compare import (compare_hits, compared_rows, load_reference, plan_compare, reference_hits, run_pyhmmer,
                          save_reference, summary_text, write_rows)
    from .io import read_hmm_sample
    from .outfiles import write_text
    from .merge import open_hit_source
    from .output import write_json

    th = thresholds(args)
    if args.save_reference and (args.ours or args.reference or args.json or args.summary or args.rows):
        raise ValueError("compare --save-reference runs pyhmmer alone: no --ours, --reference, --json, --summary "
                         "or --rows")
    if not args.save_reference and not (args.ours and args.json):
        raise ValueError("compare needs --ours and --json (or --save-reference)")
    inputs = [args.hmms, args.seqs, *([args.ours] if args.ours else []), *(args.search_stats or []),
              *([args.reference] if args.reference else [])]
    outputs = OutputSet(option_paths(args, "json", "summary", "rows", "save_reference"), inputs=inputs)
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
                    w = read_json_file(path, "search --stats", "stats").get("wall_s")
                    if not isinstance(w, (int, float)) or w < 0:
                        raise InputError(f"{path}: not a search --stats file (no search seconds)")
                    wall += float(w)
                max_seconds = args.max_fraction * wall * args.search_scale
        seqs = load_seqs(args.seqs)
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
