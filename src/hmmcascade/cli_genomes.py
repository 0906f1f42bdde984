"""Command line of genome runs: ``hmmcascade genes`` (pyrodigal's gene calls of many genomes, pooled)
and ``hmmcascade split-genomes`` (the pooled search's merged hits as per-genome outputs);
:mod:`hmmcascade.genomes`, :mod:`hmmcascade.genome_split`."""

from __future__ import annotations

import json
import os

from .cli_common import add_thresholds, read_families, search_space, thresholds
from .io import InputError

__all__ = ["add_genome_parsers"]


def add_genome_parsers(sub) -> None:
    """Adds ``genes`` and ``split-genomes`` to ``sub`` (``add_subparsers()``'s object)."""
    from .genomes import SINGLE_MIN_BP

    s = sub.add_parser("genes", help="call genes of nucleotide genomes with pyrodigal; pool their proteins",
                       description="Call the genes of each genome (a folder of nucleotide FASTA files, or a sample "
                                   "sheet: sample<TAB>path) with pyrodigal, in parallel; write each genome's proteins, "
                                   "the pooled proteins (<sample>|<contig>_<n>), the gene table and a JSON summary.")
    s.add_argument("genomes", help="folder of nucleotide FASTA files (gzipped or not) or a TSV sample sheet")
    s.add_argument("--outdir", help="also each genome's proteins in OUTDIR/<sample>/<sample>.faa (split-genomes "
                                    "--proteins writes them from the pooled FASTA)")
    s.add_argument("--proteins", required=True, help="the pooled protein FASTA")
    s.add_argument("--genes", required=True, help="the gene table (TSV: a line per gene)")
    s.add_argument("--meta", required=True, help="JSON: per genome its mode, contigs, genes and seconds")
    s.add_argument("--mode", choices=("auto", "single", "meta"), default="auto",
                   help="single: trained per genome; meta: pyrodigal's metagenomic models; auto (default): single "
                        "from --single-min-bp bases, else meta")
    s.add_argument("--translation-table", type=int, default=11, help="single mode's genetic code (default 11)")
    s.add_argument("--single-min-bp", type=int, default=SINGLE_MIN_BP,
                   help=f"auto: single mode from this many bases (default {SINGLE_MIN_BP})")
    s.add_argument("--closed", action="store_true", help="genes may not run off contig edges")
    s.add_argument("--cpu", type=int, default=None, metavar="N", help="processes (default: the CPUs usable)")
    s.set_defaults(func=cmd_genes)

    s = sub.add_parser("split-genomes", help="per-genome pfam_scan tables and GFF3 from a pooled search's hits")
    s.add_argument("hits", nargs="+",
                   help="the merged hits (merge --merged-hits: a Parquet hit file or folder), or every search job's "
                        "--hits, read as one: the same tables where the merge sets no flag the split reads otherwise "
                        "(model cutoffs --cut_*, a fixed --domZ, or every target in each search job)")
    s.add_argument("--genes", required=True, help="genes' gene table")
    s.add_argument("--meta", required=True, help="genes' JSON")
    s.add_argument("--outdir", required=True, help="OUTDIR/<sample>/<sample>.pfam_scan.tsv and .gff3")
    s.add_argument("--summary", required=True, help="a line per genome (TSV): genes, genes with domains, families")
    s.add_argument("--proteins", help="genes' pooled FASTA: also each genome's proteins, OUTDIR/<sample>/<sample>.faa")
    s.add_argument("--protein-summary", metavar="F",
                   help="also the protein summary of all genomes (merge --protein-summary's columns: a line per protein "
                        "of the pfam_scan tables, named <sample>|<protein>)")
    s.add_argument("--z-per", choices=("genome", "pool"), default="genome",
                   help="E-values per genome (Z: its proteins; needs --cut_*) or of the pool (default genome)")
    s.add_argument("--pfam-dat", help="Pfam-A.hmm.dat(.gz): family types, clans (clan overlaps resolved)")
    s.add_argument("--significant-only", action="store_true", help="only significant domains (pfam_scan's default)")
    s.add_argument("--cpu", type=int, default=1, metavar="N",
                   help="processes: the hits are read and the genomes written side by side (default 1; 0: the CPUs "
                        "usable)")
    add_thresholds(s)
    s.set_defaults(func=cmd_split_genomes)


def cmd_genes(args) -> int:
    import pyrodigal

    from .genomes import GeneSettings, call_all_genes, genome_inputs

    if args.translation_table not in pyrodigal.TRANSLATION_TABLES:
        raise ValueError(f"--translation-table {args.translation_table}: not a genetic code pyrodigal knows "
                         f"({', '.join(map(str, sorted(pyrodigal.TRANSLATION_TABLES)))})")
    if args.cpu is not None and args.cpu < 0:
        raise ValueError(f"Option --cpu takes integer arg in range n>=0; got {args.cpu}")
    genomes = genome_inputs(args.genomes)
    workers = min(len(genomes), args.cpu or len(os.sched_getaffinity(0)))
    settings = GeneSettings(args.mode, args.translation_table, args.single_min_bp, args.closed)
    call_all_genes(genomes, settings, outdir=args.outdir, pooled=args.proteins, gene_table=args.genes,
                   meta=args.meta, workers=workers)
    return 0


def cmd_split_genomes(args) -> int:
    from .genome_split import split_genomes

    th = thresholds(args)
    Z = search_space(args)
    if Z is None:
        raise ValueError("split-genomes needs the pool's search space: -Z or --targets-from")
    try:
        with open(args.meta, encoding="utf-8") as fh:
            meta = json.load(fh)
        meta["genomes"]
    except FileNotFoundError:
        raise InputError(f"{args.meta}: genes' JSON not found") from None
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{args.meta}: not the JSON of hmmcascade genes") from None
    if args.cpu < 0:
        raise ValueError(f"Option --cpu takes integer arg in range n>=0; got {args.cpu}")
    split_genomes(args.hits, args.genes, meta, th, Z, outdir=args.outdir, summary=args.summary, z_mode=args.z_per,
                  families=read_families(args), significant_only=args.significant_only,
                  workers=args.cpu or len(os.sched_getaffinity(0)), proteins=args.proteins,
                  protein_summary=args.protein_summary)
    return 0
