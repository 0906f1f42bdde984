"""Accuracy check: our hits and domains against ``pyhmmer.hmmsearch`` on the same inputs and thresholds.

Sequence level: the (model, target) pairs each side reports and includes, and
the full-sequence score difference for pairs both report.  Domain level, for
pairs both report: each of pyhmmer's reported domains is matched to one of
ours on the same pair whose envelope overlaps it by at least 90% (of the
union of the two envelopes); for matches we record whether envelope and
alignment coordinates are identical and the domain score difference.  Every
difference is listed in the result, so it can be explained.

At Pfam-A x Swiss-Prot scale pyhmmer would take hours: :func:`plan_compare` then compares a
seeded sample of the models against every target.  hmmsearch treats each model on its own: with
the whole search's Z (all targets) given, a sampled model's hits, E-values, domZ (its reported
targets) and domains are exactly those of the full search, so the sampled rows are compared
exactly, not approximately.  The sample takes models in a seeded random order while pyhmmer's
estimated time (:data:`PYHMMER_GCUPS_PER_CPU`) stays within the budget, at least one model.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass

import numpy as np

from .cascade import Thresholds
from .io import SequenceSet, read_sequences
from .results import Hit

__all__ = ["COMPARE_MODES", "FULL_BELOW_S", "PYHMMER_GCUPS_PER_CPU", "REFERENCE_FORMAT", "RefDomain", "RefHit",
           "plan_compare", "run_pyhmmer", "reference_hits", "save_reference", "load_reference", "compare_hits",
           "compared_rows", "write_rows", "summary_text"]

#: compare's modes: "full" (every model), "sample" (a seeded sample of the models within the time
#: budget), "auto" (full when pyhmmer's estimated time is within the budget, else a sample)
COMPARE_MODES = ("auto", "full", "sample")
#: pyhmmer's speed per CPU thread, for the estimate that sizes a sample: dev-x10 (1.26e13 cells) took
#: 108.45 s on the H100 machine's 16 cores (2026-11-25), 116 GCUPS, 7.3 per core
PYHMMER_GCUPS_PER_CPU = 7.0
#: "auto" compares in full whenever pyhmmer's estimated time is at most this (or the budget)
FULL_BELOW_S = 10.0


def plan_compare(model_nodes, residues: int, cpus: int, max_seconds: float, mode: str = "auto",
                 seed: int = 1, sample_models: int | None = None) -> dict:
    """Which models compare runs with pyhmmer: ``{"mode": "full" | "sample", "models": sorted
    indices (all for "full"), "estimated_s": pyhmmer's estimated seconds for all models,
    "sample_estimated_s": for those chosen, "seed", "max_seconds"}``.

    ``model_nodes``: each model's length; ``residues``: all targets' residues; ``cpus``: pyhmmer's
    threads.  "sample" with ``sample_models``: that many models (seeded); without: as many as
    ``max_seconds`` allows, taken in a seeded random order, at least one.  "auto": "full" where the
    estimate for all models is within ``max_seconds`` or :data:`FULL_BELOW_S`, else "sample"."""
    if mode not in COMPARE_MODES:
        raise ValueError(f"compare mode must be one of {', '.join(COMPARE_MODES)}; got {mode!r}")
    nodes = np.asarray(model_nodes, dtype=np.float64)
    rate = max(int(cpus), 1) * PYHMMER_GCUPS_PER_CPU * 1e9
    seconds = nodes * float(residues) / rate
    total = float(seconds.sum())
    plan = {"seed": int(seed), "max_seconds": float(max_seconds), "estimated_s": total, "models_total": len(nodes)}
    if mode == "full" or (mode == "auto" and total <= max(max_seconds, FULL_BELOW_S)) or len(nodes) == 0:
        return {**plan, "mode": "full", "models": np.arange(len(nodes)), "sample_estimated_s": total}
    order = np.random.default_rng(seed).permutation(len(nodes))
    if sample_models:
        take = order[: max(1, min(int(sample_models), len(nodes)))]
    else:
        within = np.cumsum(seconds[order]) <= max_seconds
        take = order[: max(1, int(within.sum()))]
    take = np.sort(take)
    return {**plan, "mode": "sample", "models": take, "sample_estimated_s": float(seconds[take].sum())}

_CUT_NAMES = {"ga": "gathering", "tc": "trusted", "nc": "noise"}


def run_pyhmmer(hmms, seqs, th: Thresholds, Z: float, cpus: int = 0) -> dict:
    """``pyhmmer.hmmsearch`` with the same thresholds; ``{(query, target): Hit}`` of reported hits.

    ``seqs``: a :class:`~hmmcascade.io.SequenceSet` or a sequence file's path (read with
    :func:`~hmmcascade.io.read_sequences`, never handed to Easel by name: Easel would gunzip a
    ``.gz`` name through a shell).  pyhmmer searches the same digital sequences, named by their
    index, so that names whose bytes are not UTF-8 come back as read.
    """
    import pyhmmer
    from pyhmmer.easel import Alphabet, DigitalSequence, DigitalSequenceBlock

    if not isinstance(seqs, SequenceSet):
        seqs = read_sequences(seqs)
    amino = Alphabet.amino()
    targets = DigitalSequenceBlock(amino, [
        DigitalSequence(amino, name=str(i), sequence=seqs.residues[o: o + n])
        for i, (o, n) in enumerate(zip(seqs.offsets.tolist(), seqs.lengths.tolist()))])
    options = {"Z": Z, "F1": th.F1, "F2": th.F2, "F3": th.F3, "bias_filter": th.bias_filter}
    if th.domZ is not None:
        options["domZ"] = th.domZ
    if th.cut:
        options["bit_cutoffs"] = _CUT_NAMES[th.cut]
    else:
        options.update(E=th.E, domE=th.domE, incE=th.incE, incdomE=th.incdomE)
        for name in ("T", "domT", "incT", "incdomT"):
            if getattr(th, name) is not None:
                options[name] = getattr(th, name)
    ref = {}
    for top in pyhmmer.hmmsearch(hmms, targets, cpus=cpus, **options):
        for hit in top.reported:
            ref[(top.query.name, seqs.names[int(hit.name)])] = hit
    return ref


#: the format tag of a saved reference (:func:`save_reference`)
REFERENCE_FORMAT = "hmmcascade-reference/1"


@dataclass(frozen=True)
class RefDomain:
    """One of pyhmmer's reported domains, as compared: coordinates, score (bits), E-values, inclusion."""
    env_from: int
    env_to: int
    ali_from: int
    ali_to: int
    hmm_from: int
    hmm_to: int
    score: float
    c_evalue: float
    i_evalue: float
    included: bool


@dataclass(frozen=True)
class RefHit:
    """One of pyhmmer's reported hits, as compared: score (bits), E-value, inclusion, reported domains."""
    score: float
    evalue: float
    included: bool
    domains: tuple[RefDomain, ...]


def _ref_hit(hit) -> RefHit:
    """``hit`` (a ``pyhmmer.plan7.Hit`` or a :class:`RefHit`) as a :class:`RefHit`."""
    if isinstance(hit, RefHit):
        return hit
    doms = []
    for d in hit.domains.reported:
        a = d.alignment
        doms.append(RefDomain(int(d.env_from), int(d.env_to), int(a.target_from), int(a.target_to), int(a.hmm_from),
                              int(a.hmm_to), float(d.score), float(d.c_evalue), float(d.i_evalue), bool(d.included)))
    return RefHit(float(hit.score), float(hit.evalue), bool(hit.included), tuple(doms))


def reference_hits(ref: dict) -> dict:
    """``{(query, target): RefHit}`` of :func:`run_pyhmmer`'s result (or of RefHits, unchanged)."""
    return {key: _ref_hit(hit) for key, hit in ref.items()}


def save_reference(path, ref: dict, plan: dict, Z: float) -> None:
    """pyhmmer's hits (``ref``) for the models of ``plan`` (:func:`plan_compare`) at search space ``Z``, as
    gzipped JSON at ``path`` (atomically), for a later ``compare --reference``: pyhmmer runs beside the
    GPU's searches and the comparison itself takes seconds once the merge is done."""
    from .outfiles import open_output

    doc = {"format": REFERENCE_FORMAT, "Z": float(Z),
           "plan": {**{k: v for k, v in plan.items() if k != "models"}, "models": [int(m) for m in plan["models"]]},
           "hits": [[q, t, r.score, r.evalue, r.included, [list(asdict(d).values()) for d in r.domains]]
                    for (q, t), r in sorted(reference_hits(ref).items())]}
    with open_output(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=3, mtime=0) as gz:
        gz.write(json.dumps(doc, separators=(",", ":")).encode())


def load_reference(path) -> tuple[dict, dict, float]:
    """A saved reference: ``(ref, plan, Z)`` (``plan["models"]`` an array); a file that is not one is a
    ``ValueError`` naming it."""
    try:
        with gzip.open(path, "rt") as fh:
            doc = json.load(fh)
        if doc.get("format") != REFERENCE_FORMAT:
            raise ValueError(f"format {doc.get('format')!r}")
        ref = {(q, t): RefHit(float(score), float(evalue), bool(inc), tuple(RefDomain(*d) for d in doms))
               for q, t, score, evalue, inc, doms in doc["hits"]}
        plan = dict(doc["plan"], models=np.asarray(doc["plan"]["models"], dtype=np.int64))
        return ref, plan, float(doc["Z"])
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: not a saved pyhmmer reference (compare --save-reference): {exc}") from None


def compared_rows(ours: list[Hit], ref: dict) -> list[tuple]:
    """The scores of the rows both sides report, for a plot of their agreement: ``(level, query, target,
    domain, ours_bits, pyhmmer_bits)`` with level ``sequence`` (domain ``-``) or ``domain`` (the domain's
    number in pyhmmer's order, 1-based, paired to ours by identical envelope)."""
    ref = reference_hits(ref)
    mine = {(h.model_name, h.target_name): h for h in ours if h.reported}
    rows = []
    for key in sorted(set(mine) & set(ref)):
        h, r = mine[key], ref[key]
        rows.append(("sequence", *key, "-", h.score, r.score))
        by_env = {(d.env_from, d.env_to): d for d in h.domains if d.reported}
        for i, rd in enumerate(r.domains, 1):
            od = by_env.get((rd.env_from, rd.env_to))
            if od is not None:
                rows.append(("domain", *key, str(i), od.score, rd.score))
    return rows


def write_rows(path, rows: list[tuple]) -> None:
    """:func:`compared_rows` as a TSV with a header line (atomically)."""
    from .outfiles import write_text

    lines = ["level\tquery\ttarget\tdomain\thmmcascade_bits\tpyhmmer_bits"]
    lines += [f"{lv}\t{q}\t{t}\t{d}\t{a:.6g}\t{b:.6g}" for lv, q, t, d, a, b in rows]
    write_text(path, "\n".join(lines) + "\n")


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0]) + 1
    union = max(a[1], b[1]) - min(a[0], b[0]) + 1
    return max(inter, 0) / union


def _printed_hit(h) -> tuple[str, str]:
    """A hit's full-sequence E-value and score as the tblout prints them (%9.2g, %6.1f)."""
    return f"{h.evalue:.2g}", f"{h.score:.1f}"


def _printed_domain(d) -> tuple[str, str, str]:
    """A domain's c-Evalue, i-Evalue and score as the domtblout prints them (%9.2g, %9.2g, %6.1f)."""
    return f"{d.c_evalue:.2g}", f"{d.i_evalue:.2g}", f"{d.score:.1f}"


def compare_hits(ours: list[Hit], ref: dict, *, seq_tolerance_bits: float = 0.1,
                 dom_tolerance_bits: float = 0.5, show: int = 50) -> dict:
    """Sequence- and domain-level agreement of our reported hits with pyhmmer's (``ref``: pyhmmer's
    hits or :class:`RefHit` by (query, target))."""
    ref = reference_hits(ref)
    mine = {(h.model_name, h.target_name): h for h in ours if h.reported}
    both = sorted(set(mine) & set(ref))
    missing = sorted(set(ref) - set(mine))
    extra = sorted(set(mine) - set(ref))
    inc_ours = {k for k, h in mine.items() if h.included}
    inc_ref = {k for k, h in ref.items() if h.included}
    seq_rows = []
    for key in both:
        diff = mine[key].score - ref[key].score
        seq_rows.append({"query": key[0], "target": key[1], "ours": mine[key].score, "pyhmmer": ref[key].score,
                         "diff_bits": diff})
    seq_rows.sort(key=lambda r: -abs(r["diff_bits"]))
    # identical, not matched: the same float score, and the tblout's E-value and score as printed
    seq_identical = sum(mine[k].score == ref[k].score for k in both)
    seq_printed = sum(_printed_hit(mine[k]) == _printed_hit(ref[k]) for k in both)

    n_ref_dom = n_ref_inc_dom = 0
    matched = matched_inc = exact_env = exact_ali = within = dom_identical = dom_printed = 0
    unmatched, extra_dom, dom_diffs = [], [], []
    for key in both:
        ours_d = [d for d in mine[key].domains if d.reported]
        used = set()
        for rd in ref[key].domains:
            n_ref_dom += 1
            n_ref_inc_dom += bool(rd.included)
            renv = (rd.env_from, rd.env_to)
            best, best_ov = None, 0.0
            for j, od in enumerate(ours_d):
                if j in used:
                    continue
                ov = _overlap(renv, (od.env_from, od.env_to))
                if ov > best_ov:
                    best, best_ov = j, ov
            row = {"query": key[0], "target": key[1], "pyhmmer_env": list(renv), "pyhmmer_score": rd.score,
                   "pyhmmer_included": bool(rd.included)}
            if best is None or best_ov < 0.9:
                unmatched.append(row)
                continue
            used.add(best)
            od = ours_d[best]
            matched += 1
            matched_inc += bool(rd.included)
            exact_env += (od.env_from, od.env_to) == renv
            exact_ali += (od.ali_from, od.ali_to, od.hmm_from, od.hmm_to) == (
                rd.ali_from, rd.ali_to, rd.hmm_from, rd.hmm_to)
            diff = od.score - rd.score
            within += abs(diff) <= dom_tolerance_bits
            dom_identical += od.score == rd.score
            dom_printed += _printed_domain(od) == _printed_domain(rd)
            row.update(ours_env=[od.env_from, od.env_to], ours_score=od.score, diff_bits=diff,
                       overlap=round(best_ov, 4))
            if abs(diff) > 0.05 or (od.env_from, od.env_to) != renv:
                dom_diffs.append(row)
        for j, od in enumerate(ours_d):
            if j not in used:
                extra_dom.append({"query": key[0], "target": key[1], "ours_env": [od.env_from, od.env_to],
                                  "ours_score": od.score})
    dom_diffs.sort(key=lambda r: -abs(r["diff_bits"]))
    n_ref, n_ours = len(ref), len(mine)
    return {
        "pyhmmer_hits": n_ref,
        "hmmcascade_hits": n_ours,
        "matched": len(both),
        "recall": len(both) / n_ref if n_ref else 1.0,
        "precision": len(both) / n_ours if n_ours else 1.0,
        "included_pyhmmer": len(inc_ref),
        "included_hmmcascade": len(inc_ours),
        "included_identical": inc_ours == inc_ref,
        "included_missing": sorted(map(list, inc_ref - inc_ours))[:show],
        "included_extra": sorted(map(list, inc_ours - inc_ref))[:show],
        "missing": [{"query": q, "target": t, "pyhmmer_score": ref[(q, t)].score} for q, t in missing],
        "extra": [{"query": q, "target": t, "ours_bits": mine[(q, t)].score} for q, t in extra[:show]],
        "extra_count": len(extra),
        "seq_tolerance_bits": seq_tolerance_bits,
        "seq_scores_within_tolerance": sum(abs(r["diff_bits"]) <= seq_tolerance_bits for r in seq_rows),
        "seq_scores_compared": len(seq_rows),
        "max_abs_seq_diff_bits": max((abs(r["diff_bits"]) for r in seq_rows), default=0.0),
        "seq_scores_identical": seq_identical,
        "seq_rows_identical_as_printed": seq_printed,
        "largest_seq_differences": seq_rows[:show],
        "domains_pyhmmer": n_ref_dom,
        "domains_matched": matched,
        "domains_matched_fraction": matched / n_ref_dom if n_ref_dom else 1.0,
        "included_domains_pyhmmer": n_ref_inc_dom,
        "included_domains_matched": matched_inc,
        "included_domains_matched_fraction": matched_inc / n_ref_inc_dom if n_ref_inc_dom else 1.0,
        "domains_identical_envelope": exact_env,
        "domains_identical_alignment_coords": exact_ali,
        "dom_tolerance_bits": dom_tolerance_bits,
        "domain_scores_within_tolerance": within,
        "domain_scores_identical": dom_identical,
        "domains_identical_as_printed": dom_printed,
        "domains_unmatched": unmatched[:show],
        "domains_unmatched_count": len(unmatched),
        "domains_extra": extra_dom[:show],
        "domains_extra_count": len(extra_dom),
        "domain_differences": dom_diffs[:show],
        "domain_differences_count": len(dom_diffs),
    }


def summary_text(result: dict) -> str:
    r = result
    s = r.get("sample")
    if s:
        what = (f"  compared: a sample of {s['models']:,} of {s['models_total']:,} models (seed {s['seed']}), "
                f"every target; pyhmmer estimated {s['sample_estimated_s']:,.1f} s for the sample, "
                f"{s['estimated_s']:,.1f} s for all models (budget {s['max_seconds']:,.1f} s)")
    else:
        what = "  compared: every model and target"
    lines = [
        "hmmcascade vs pyhmmer.hmmsearch",
        what,
        f"  sequences: pyhmmer {r['pyhmmer_hits']}, hmmcascade {r['hmmcascade_hits']}, matched {r['matched']}"
        f"  (recall {r['recall']:.4f}, precision {r['precision']:.4f})",
        f"  included sequences: pyhmmer {r['included_pyhmmer']}, hmmcascade {r['included_hmmcascade']},"
        f" identical sets: {r['included_identical']}",
        f"  sequence scores within {r['seq_tolerance_bits']} bits: {r['seq_scores_within_tolerance']}"
        f"/{r['seq_scores_compared']}  (max |diff| {r['max_abs_seq_diff_bits']:.3g} bits)",
        f"  domains: pyhmmer {r['domains_pyhmmer']}, matched {r['domains_matched']}"
        f" ({r['domains_matched_fraction']:.4f}); included {r['included_domains_matched']}"
        f"/{r['included_domains_pyhmmer']} ({r['included_domains_matched_fraction']:.4f})",
        f"  matched domains: identical envelopes {r['domains_identical_envelope']}, identical alignment"
        f" coordinates {r['domains_identical_alignment_coords']}, scores within {r['dom_tolerance_bits']} bits"
        f" {r['domain_scores_within_tolerance']}",
        f"  unmatched pyhmmer domains {r['domains_unmatched_count']}, extra hmmcascade domains"
        f" {r['domains_extra_count']}",
        f"  identical, not only matched: sequence scores {r['seq_scores_identical']}/{r['seq_scores_compared']},"
        f" E-value and score as printed {r['seq_rows_identical_as_printed']}/{r['seq_scores_compared']};"
        f" domain scores {r['domain_scores_identical']}/{r['domains_matched']}, c-Evalue, i-Evalue and score as"
        f" printed {r['domains_identical_as_printed']}/{r['domains_matched']}",
    ]
    if r["missing"]:
        lines.append("  MISSING (reported by pyhmmer, not by hmmcascade):")
        lines += [f"    {m['query']}  {m['target']}  {m['pyhmmer_score']:.1f} bits" for m in r["missing"][:20]]
    if r["extra_count"]:
        lines.append("  EXTRA (reported by hmmcascade, not by pyhmmer):")
        lines += [f"    {m['query']}  {m['target']}  {m['ours_bits']:.1f} bits" for m in r["extra"][:20]]
    return "\n".join(lines)
