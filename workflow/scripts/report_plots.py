"""The workflow report's plots (rule report_plots, workflow/rules/report.smk), from a finished run's files.

Five SVG figures, each shown in `snakemake --report` with its caption (workflow/report/*.rst):

* score_agreement.svg: hmmcascade's bit scores against pyhmmer's, per compared sequence and domain
  (results/accuracy_rows.tsv: level, query, target, domain, hmmcascade_bits, pyhmmer_bits), and
  their differences;
* stages.svg: the fraction of model x target pairs past each filter (MSV, bias, Viterbi, Forward;
  HMMER's F1/F2/F3 as marks) and each stage's throughput in GCUPS (results/stats.json);
* families.svg: the most frequent families (domains) and clans (proteins) of the pfam_scan table, read
  from the protein summary;
* domains_per_protein.svg: how many proteins have 0, 1, 2, ... domains (pfam_scan table, all targets);
* provenance.svg: what made the run (sources, Pfam and UniProt releases, thresholds, Z, device, times)
  and each rule's wall time (Snakemake's benchmark tables).

Usage: python report_plots.py --outdir DIR --stats STATS --search-stats S1 [S2 ...] --proteins TSV
       --meta META [--accuracy-rows TSV] [--provenance JSON ...] [--benchmarks DIR] [--setting KEY=VALUE ...]
Errors are one line on stderr (exit 1).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"  # (text as SVG text, drawn by the browser: searchable, smaller)
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen
from matplotlib.ticker import MaxNLocator  # noqa: E402

#: families and clans shown in families.svg
TOP = 20
STAGES = (("MSV", "past_msv", "F1"), ("bias", "past_bias", "F1"), ("Viterbi", "past_vit", "F2"),
          ("Forward", "past_fwd", "F3"))
THROUGHPUT_STAGES = ("msv", "bias", "viterbi", "forward", "domains")
BLUE, ORANGE, GREY = "#1f77b4", "#ff7f0e", "#7f7f7f"


class ReportError(ValueError):
    """A missing or malformed input: one line naming the file."""


def read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: {' '.join(str(exc).split())}") from None


def read_proteins(path: str) -> dict:
    """The protein summary (hmmcascade.proteins.tsv: the pfam_scan table's domains, a line per protein),
    counted as it is read: domains per family (name and accession) and per clan (the proteins with one),
    proteins per number of domains.  Lines are counted by their architecture, accessions and clans
    first (Swiss-Prot's 570,000 proteins have far fewer architectures), then each architecture's
    families and clans once; so Swiss-Prot's table reads in seconds."""
    lines: Counter = Counter()
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip() or line.startswith("#") or line.startswith("protein\t"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 6 or not fields[2].isdigit():
                raise ReportError(f"{path}: line {n}: not a protein summary line ({len(fields)} columns, expected 6)")
            lines[fields[2], fields[3], fields[4], fields[5]] += 1
    families, clans, per_protein = Counter(), Counter(), Counter()
    for (domains, names, accs, clan), k in lines.items():
        for name, acc in zip(names.split(" "), accs.split(" ")):
            families[f"{name} ({acc.split('.')[0]})" if acc != "-" else name] += k
        if clan != "-":
            for c in clan.split(" "):
                clans[c] += k
        per_protein[int(domains)] += k
    return {"families": families, "clans": clans, "per_protein": per_protein}


def read_accuracy_rows(path: str) -> dict[str, list[tuple[float, float]]]:
    """(pyhmmer bits, hmmcascade bits) per level (sequence, domain) of the compared pairs; a side
    without a number (a pair one of them lacks) is left out."""
    out: dict[str, list[tuple[float, float]]] = {"sequence": [], "domain": []}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader((line for line in fh if not line.startswith("#")), delimiter="\t")
        missing = {"level", "hmmcascade_bits", "pyhmmer_bits"} - set(reader.fieldnames or ())
        if missing:
            raise ReportError(f"{path}: no column {sorted(missing)[0]} (expected level, query, target, domain, "
                              "hmmcascade_bits, pyhmmer_bits)")
        for row in reader:
            try:
                pair = (float(row["pyhmmer_bits"]), float(row["hmmcascade_bits"]))
            except (TypeError, ValueError):
                continue
            out.setdefault(row["level"], []).append(pair)
    return out


def _save(fig, outdir: Path, name: str) -> None:
    """The figure as outdir/name, written whole (a temporary name, then renamed)."""
    path = outdir / name
    tmp = outdir / f".{name}.part"
    fig.savefig(tmp, format="svg", bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color=GREY, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def plot_agreement(outdir: Path, rows: dict | None, why_none: str) -> None:
    fig, axes = plt.subplots(2, 2, figsize=(11, 9))
    fig.suptitle("Score agreement with pyhmmer.hmmsearch (compared rows)")
    for col, level in enumerate(("sequence", "domain")):
        top, bottom = axes[0][col], axes[1][col]
        pairs = (rows or {}).get(level) or []
        if not pairs:
            _empty(top, why_none if rows is None else f"no {level} rows compared")
            _empty(bottom, "")
            continue
        ref = [p[0] for p in pairs]
        ours = [p[1] for p in pairs]
        diff = [o - r for r, o in pairs]
        worst = max(abs(d) for d in diff)
        lo, hi = min(ref + ours), max(ref + ours)
        top.plot([lo, hi], [lo, hi], color=GREY, lw=1, ls="--", label="equal")
        top.scatter(ref, ours, s=10, color=BLUE, alpha=0.7, label=f"{len(pairs)} {level}s")
        top.set_xlabel("pyhmmer bit score")
        top.set_ylabel("hmmcascade bit score")
        top.set_title(f"{level} scores: {len(pairs)} compared,\nmax |difference| {worst:.3g} bits")
        top.legend(loc="upper left")
        bottom.scatter(ref, diff, s=10, color=ORANGE, alpha=0.7)
        bottom.axhline(0, color=GREY, lw=1)
        bottom.set_xlabel("pyhmmer bit score")
        bottom.set_ylabel("hmmcascade - pyhmmer (bits)")
        bottom.set_title(f"{level} score differences")
    _save(fig, outdir, "score_agreement.svg")


def plot_stages(outdir: Path, stats: dict, settings: dict) -> None:
    s = stats["stats"]
    pairs = max(int(s["models"]) * int(s["targets"]), 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    names = [name for name, _, _ in STAGES]
    rates = [int(s[key]) / pairs for _, key, _ in STAGES]
    bars = left.bar(names, [max(r, 1e-12) for r in rates], color=BLUE)
    left.set_yscale("log")
    left.set_ylim(min([r for r in rates if r > 0] + [1e-6]) / 5, 2)
    for bar, (name, key, f) in zip(bars, STAGES):
        left.annotate(f"{int(s[key]):,}\n({int(s[key]) / pairs:.3g})", (bar.get_x() + bar.get_width() / 2,
                      max(bar.get_height(), 1e-12)), ha="center", va="bottom", fontsize=8)
        if settings.get(f):  # (HMMER's expected pass rate on random sequences)
            left.hlines(float(settings[f]), bar.get_x(), bar.get_x() + bar.get_width(), colors=ORANGE, lw=2)
    left.plot([], [], color=ORANGE, lw=2, label="HMMER's expected rate (F1, F2, F3)")
    left.legend(loc="lower left", fontsize=8)
    left.set_ylabel("fraction of model x target pairs passing")
    left.set_title(f"Per-stage pass rates:\n{int(s['models']):,} models x {int(s['targets']):,} targets")
    gcups = []
    for stage in THROUGHPUT_STAGES:
        sec = float(s["kernel_s"].get(stage, 0.0))
        gcups.append(float(s["cells"].get(stage, 0)) / sec / 1e9 if sec > 0 else 0.0)
    bars = right.bar(THROUGHPUT_STAGES, gcups, color=BLUE)
    for bar, g in zip(bars, gcups):
        right.annotate(f"{g:.3g}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                       fontsize=8)
    wall = float(s.get("wall_s") or 0.0)
    overall = float(s["cells"].get("msv", 0)) / wall / 1e9 if wall > 0 else 0.0
    right.set_ylabel("GCUPS (cells / kernel second / 1e9)")
    right.set_title(f"Throughput per stage;\nend to end {overall:.3g} GCUPS over {wall:.1f} s of search")
    _save(fig, outdir, "stages.svg")


def plot_families(outdir: Path, counts: dict) -> None:
    families, clans = counts["families"], counts["clans"]
    bars = max(3, min(TOP, max(len(families), len(clans))))
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 0.3 * bars + 2))
    for ax, counter, what in ((left, families, "families"), (right, clans, "clans")):
        top = counter.most_common(TOP)
        if not top:
            _empty(ax, "no clans (no Pfam-A.hmm.dat: pfam_dat)" if what == "clans" else "no domains")
            ax.set_title(f"Most frequent {what}")
            continue
        labels = [name for name, _ in reversed(top)]
        ax.barh(labels, [n for _, n in reversed(top)], color=BLUE if what == "families" else ORANGE)
        ax.set_xlabel("domains in the pfam_scan table" if what == "families" else "proteins with a domain of the clan")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"Most frequent {what} (top {len(top)} of {len(counter):,})")
        ax.tick_params(axis="y", labelsize=8)
    _save(fig, outdir, "families.svg")


def plot_domains_per_protein(outdir: Path, counts: dict, targets: int) -> None:
    histogram = Counter(counts["per_protein"])
    with_domains = sum(histogram.values())
    domains = sum(k * n for k, n in histogram.items())
    histogram[0] = max(0, targets - with_domains)
    ks = list(range(0, max(histogram) + 1))
    fig, ax = plt.subplots(figsize=(9, 4.8))
    bars = ax.bar([str(k) for k in ks], [histogram.get(k, 0) for k in ks],
                  color=[GREY] + [BLUE] * (len(ks) - 1))
    for bar, k in zip(bars, ks):
        if histogram.get(k):
            ax.annotate(f"{histogram[k]:,}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                        va="bottom", fontsize=8)
    ax.set_xlabel("domains per protein (pfam_scan table)")
    ax.set_ylabel("proteins")
    ax.set_title(f"Domains per protein: {with_domains:,} of {targets:,} proteins with domains, "
                 f"{domains:,} domains")
    _save(fig, outdir, "domains_per_protein.svg")


def _benchmark_seconds(folder: str | None) -> dict[str, float]:
    """Wall seconds per rule from Snakemake's benchmark tables under ``folder`` (rule: its file or folder name)."""
    out: Counter = Counter()
    if not folder or not os.path.isdir(folder):
        return out
    for path in sorted(Path(folder).rglob("*.tsv")):
        rule = path.parent.name if path.parent != Path(folder) else path.stem
        try:
            with open(path, encoding="utf-8", newline="") as fh:
                for row in csv.DictReader(fh, delimiter="\t"):
                    out[rule] += float(row["s"])
        except (OSError, KeyError, ValueError):
            continue  # (a table being written or of another layout: left out)
    return out


def _when(t) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if isinstance(t, (int, float)) else "-"


def plot_provenance(outdir: Path, stats: dict, search_stats: list[dict], meta: dict, provenance: list[dict],
                    settings: dict, benchmarks: dict[str, float]) -> None:
    s = stats["stats"]
    releases = {p.get("database"): p for p in provenance}
    devices = sorted({str(x.get("device", "-")) for x in search_stats}) or ["-"]
    started = min((x["started_at"] for x in search_stats if "started_at" in x), default=None)
    finished = max((x["finished_at"] for x in search_stats if "finished_at" in x), default=None)
    lines = [
        ("models", settings.get("hmms", "-")),
        ("targets", settings.get("sequences", "-")),
        ("Pfam release", f"{releases['pfam']['release']} (fetched {releases['pfam'].get('fetched_utc', '-')})"
         if "pfam" in releases else f"not downloaded (databases: {settings.get('databases', '-')})"),
        ("UniProt release", f"{releases['uniprot']['release']} (fetched {releases['uniprot'].get('fetched_utc', '-')})"
         if "uniprot" in releases else f"not downloaded (databases: {settings.get('databases', '-')})"),
        ("searched", f"{int(s['models']):,} models ({int(s['nodes']):,} nodes) x {int(meta['targets']):,} targets "
                     f"({int(meta['residues']):,} residues) in {len(search_stats)} search jobs"),
        ("preset", settings.get("preset", "-")),
        ("thresholds", settings.get("thresholds", "-")),
        ("search space Z", f"{float(stats['Z']):g}"),
        ("device", "; ".join(devices)),
        ("searches", f"{_when(started)} to {_when(finished)}"
                     + (f" ({finished - started:.1f} s)" if started is not None and finished is not None else "")),
        ("search seconds", f"{float(s.get('wall_s') or 0):.1f} s of search jobs' wall time, "
                           f"{sum(float(v) for v in s['kernel_s'].values()):.1f} s in kernels"),
        ("report made", _when(time.time())),
    ]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 9), gridspec_kw={"height_ratios": [1.1, 1]})
    top.axis("off")
    top.set_title("Run provenance", loc="left", fontsize=13)
    for i, (key, value) in enumerate(lines):
        y = 1 - (i + 0.5) / len(lines)
        top.text(0.0, y, key, transform=top.transAxes, fontweight="bold", va="center", fontsize=9)
        top.text(0.18, y, str(value), transform=top.transAxes, va="center", fontsize=9)
    if benchmarks:
        names = sorted(benchmarks, key=benchmarks.get)
        bars = bottom.barh(names, [benchmarks[n] for n in names], color=BLUE)
        for bar, n in zip(bars, names):
            bottom.annotate(f" {benchmarks[n]:.1f} s", (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                            va="center", fontsize=8)
        bottom.set_xlabel("wall seconds (all of the rule's jobs; Snakemake's benchmark tables)")
        bottom.set_title("Time per rule")
    else:
        _empty(bottom, "no benchmark tables (logs/benchmarks)")
    _save(fig, outdir, "provenance.svg")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--outdir", required=True)
    p.add_argument("--stats", required=True, help="the merged per-stage statistics (results/stats.json)")
    p.add_argument("--search-stats", nargs="+", required=True, help="each search job's --stats JSON")
    p.add_argument("--proteins", required=True,
                   help="the protein summary (hmmcascade.proteins.tsv; a genome run: results/genomes/proteins.tsv)")
    p.add_argument("--meta", required=True, help="prepare --meta JSON (targets, residues)")
    p.add_argument("--accuracy-rows", default=None, help="the comparison's rows (accuracy_rows.tsv)")
    p.add_argument("--provenance", nargs="*", default=[], help="fetch provenance JSON files")
    p.add_argument("--benchmarks", default=None, help="folder of Snakemake's benchmark tables")
    p.add_argument("--setting", nargs="*", default=[], metavar="KEY=VALUE",
                   help="the run's settings to show (hmms, sequences, databases, preset, thresholds, F1, F2, F3)")
    args = p.parse_args(argv)
    try:
        settings = dict(item.partition("=")[::2] for item in args.setting)
        outdir = Path(args.outdir)
        outdir.mkdir(parents=True, exist_ok=True)
        stats = read_json(args.stats)
        if "stats" not in stats or "Z" not in stats:
            raise ReportError(f"{args.stats}: not a merge --stats file (no 'stats' or 'Z')")
        search_stats = [read_json(path) for path in args.search_stats]
        meta = read_json(args.meta)
        counts = read_proteins(args.proteins)
        accuracy = read_accuracy_rows(args.accuracy_rows) if args.accuracy_rows else None
        plot_agreement(outdir, accuracy, "no comparison with pyhmmer in this run (compare.enabled / compare.mode)")
        plot_stages(outdir, stats, settings)
        plot_families(outdir, counts)
        plot_domains_per_protein(outdir, counts, int(meta["targets"]))
        plot_provenance(outdir, stats, search_stats, meta, [read_json(path) for path in args.provenance], settings,
                        _benchmark_seconds(args.benchmarks))
    except (ReportError, OSError, KeyError, TypeError, ValueError) as exc:
        print(f"report_plots: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(f"report_plots: 5 figures in {args.outdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
