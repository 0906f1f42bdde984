"""Command-line options and inputs shared by hmmcascade's commands (:mod:`hmmcascade.cli`,
:mod:`hmmcascade.cli_merge`): HMMER's threshold options and the :class:`~hmmcascade.cascade.Thresholds`
made of them, the search space (Z), the output options, and the readers of the commands' inputs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .cascade import Thresholds
from .io import InputError, load_sequences


def add_thresholds(p: argparse.ArgumentParser):
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


def read_json_file(path: str, what: str, key: str):
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


def search_space(args, default: float | None = None) -> float | None:
    """Z: -Z, else the target count recorded by ``prepare``, else ``default``."""
    if args.Z is not None:
        return args.Z
    if args.targets_from:
        targets = read_json_file(args.targets_from, "prepare --meta", "targets")
        if isinstance(targets, bool) or not isinstance(targets, int) or targets < 1:
            raise InputError(f"{args.targets_from}: not a prepare --meta file ('targets' is {targets!r}, "
                             "expected a positive count)")
        return float(targets)
    return default


def thresholds(args) -> Thresholds:
    cut = "ga" if args.cut_ga else "tc" if args.cut_tc else "nc" if args.cut_nc else None
    return Thresholds(F1=args.F1, F2=args.F2, F3=args.F3, bias_filter=not args.nobias, max_mode=args.max,
                      E=args.E, T=args.T, cut=cut, Z=search_space(args), domE=args.domE, domT=args.domT,
                      incE=args.incE, incT=args.incT, incdomE=args.incdomE, incdomT=args.incdomT, domZ=args.domZ)


def add_hmmer_tables(g) -> None:
    g.add_argument("--tblout", help="HMMER's per-target table (hmmsearch --tblout)")
    g.add_argument("--domtblout", help="HMMER's per-domain table (hmmsearch --domtblout)")


def add_annotations(g) -> None:
    g.add_argument("--pfamscan", help="per-protein domain table in pfam_scan.pl's columns")
    g.add_argument("--gff3", help="domains as GFF3 protein_match features")
    g.add_argument("--ipr-tsv", help="significant domains in InterProScan's TSV columns (analysis Pfam)")
    g.add_argument("--protein-summary", help="one line per protein: length, domains, architecture, clans")
    g.add_argument("--pfam-dat", help="Pfam-A.hmm.dat(.gz): family types, clans and nesting for --pfamscan/--gff3"
                                      " (enables pfam_scan's clan overlap resolution)")


def option_paths(args, *names: str) -> dict[str, str | None]:
    """``{--option: path}`` of the command's output options ``names`` (None where not given)."""
    return {"--" + name.replace("_", "-"): getattr(args, name, None) for name in names}


def read_families(args):
    """The --pfam-dat file's families, or None (read before the search, so a bad file fails at once)."""
    if not args.pfam_dat:
        return None
    from .pfam_dat import read_pfam_dat

    return read_pfam_dat(args.pfam_dat)


def shard_arg(text: str) -> tuple[int, int]:
    """``K/N`` (1 <= K <= N) as (K, N), for argparse."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def load_models(path: str):
    """The ProfileDB of a pressed file, or of a model file read and pressed (large text files in
    parallel, :func:`~hmmcascade.press.press_file`)."""
    from .profiles import ProfileDB

    if path.endswith(".npz") or ProfileDB.is_mapped(path):
        return ProfileDB.load(path)
    from .press import press_file  # (and pyhmmer with it: a search of pressed models imports neither)

    return press_file(path)


load_seqs = load_sequences  # (the commands' name for it)
