"""hmmsearch's main output (``-o``), as HMMER 3.4 prints it: the banner and option lines
(``output_header``), then per query its hit list (``p7_tophits_Targets``), each reported hit's
domain table and alignments (``p7_tophits_Domains``, ``p7_alidisplay_Print``) and its pipeline
statistics (here only the query's size, Z and domZ).  :func:`hmmcascade.output.write_alignments`
and :class:`hmmcascade.output.TableStream` write it; the two numbers every HMMER output prints
the same way (a hit's sequence bias, a query's domZ) are here for the tables too.
"""

from __future__ import annotations

import math

import numpy as np

from . import __version__
from .results import Alignment, Hit

__all__ = ["alignments_head", "alignments_query", "alignment_lines", "query_domZ", "seq_bias_bits"]


_RULE = "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -"


def alignments_head(query_file, target_file, settings=()) -> list[str]:
    """hmmsearch's banner and ``output_header``: the files, then ``settings``, the lines of the
    options given (``# show alignments in output:       no``...)."""
    return [
        "# hmmcascade hmmsearch :: search profile(s) against a sequence database",
        f"# hmmcascade {__version__}; HMMER 3.4 hmmsearch output format",
        _RULE,
        f"# query HMM file:                  {query_file or '[none]'}",
        f"# target sequence database:        {target_file or '[none]'}",
        *settings,
        _RULE,
        "",
    ]


def alignments_query(q, qhits, Z: float, domZ: float | None, textw: int, show_alignments: bool = True,
                     show_accessions: bool = False) -> list[str]:
    """The main output's block of one query ``q`` (a :class:`~hmmcascade.output.QueryInfo`) and its hits
    ``qhits`` in HMMER's order: its head, hit list, domain tables (and alignments), statistics and ``//``."""
    lines = [f"Query:       {q.name}  [M={q.length}]"]
    if q.accession:
        lines.append(f"Accession:   {q.accession}")
    if q.description:
        lines.append(f"Description: {q.description}")
    reported = [h for h in qhits if h.reported]
    qdomZ = query_domZ(qhits, domZ)
    lines += _targets_text(qhits, reported, Z, textw, show_accessions) + ["", ""]
    lines += _domains_text(q, reported, Z, qdomZ, textw, show_alignments, show_accessions) + ["", ""]
    lines += [
        "Internal pipeline statistics summary:",
        "-------------------------------------",
        "Query model(s):              %15d  (%d nodes)" % (1, q.length),
        "Initial search space (Z):    %15.0f  [as given to hmmcascade]" % Z,
        "Domain search space  (domZ): %15.0f  %s" % (qdomZ, "[number of targets reported over threshold]"
                                                       if domZ is None else "[as given to hmmcascade]"),
        "//",
    ]
    return lines


def _targets_text(qhits, reported, Z, textw, show_accessions=False) -> list[str]:
    """``p7_tophits_Targets``: the per-sequence hit list of one query."""
    namew = max([8] + [len(_shown_name(h.target_name, h.target_acc, show_accessions)) for h in qhits])
    descw = max(32, textw - namew - 61) if textw > 0 else None
    head = "  %9s %6s %5s  %9s %6s %5s  %5s %2s  %-*s %s"
    out = [
        "Scores for complete sequences (score includes all domains):",
        "  %22s  %22s  %8s" % (" --- full sequence ---", " --- best 1 domain ---", "-#dom-"),
        head % ("E-value", " score", " bias", "E-value", " score", " bias", "  exp", "N", namew, "Sequence",
                "Description"),
        head % ("-------", "------", "-----", "-------", "------", "-----", " ----", "--", namew, "--------",
                "-----------"),
    ]
    threshold_shown = False
    for h in reported:
        if not h.included and not threshold_shown:
            out.append("  ------ inclusion threshold ------")
            threshold_shown = True
        best = h.domains[h.best_domain]
        out.append("  %9.2g %6.1f %5.1f  %9.2g %6.1f %5.1f  %5.1f %2d  %-*s  %s" % (
            math.exp(h.lnP) * Z, h.score, seq_bias_bits(h), math.exp(best.lnP) * Z, best.score, best.bias,
            h.nexpected, h.nreported, namew, _shown_name(h.target_name, h.target_acc, show_accessions),
            h.target_desc[:descw]))
    if not reported:
        out += ["", "   [No hits detected that satisfy reporting thresholds]"]
    return out


def _domains_text(q, reported, Z, domZ, textw, show_alignments=True, show_accessions=False) -> list[str]:
    """``p7_tophits_Domains``: each reported hit's domain table and alignments (``--noali``: none)."""
    head = " %3s   %6s %5s %9s %9s %7s %7s %2s %7s %7s %2s %7s %7s %2s %4s"
    out = ["Domain annotation for each sequence" + (" (and alignments):" if show_alignments else ":")]
    hmm_name = _shown_name(q.name, q.accession, show_accessions)
    for h in reported:
        seq_name = _shown_name(h.target_name, h.target_acc, show_accessions)
        descw = max(32, textw - len(seq_name) - 5) if textw > 0 else None
        out.append(f">> {seq_name}  {h.target_desc[:descw]}")
        doms = [d for d in h.domains if d.reported]
        if not doms:
            out += ["   [No individual domains that satisfy reporting thresholds (although complete target did)]", ""]
            continue
        out.append(head % ("#", "score", "bias", "c-Evalue", "i-Evalue", "hmmfrom", "hmm to", "  ", "alifrom",
                           "ali to", "  ", "envfrom", "env to", "  ", "acc"))
        out.append(head % ("---", "------", "-----", "---------", "---------", "-------", "-------", "  ", "-------",
                           "-------", "  ", "-------", "-------", "  ", "----"))
        for nd, d in enumerate(doms, 1):
            a = d.alignment
            out.append(" %3d %s %6.1f %5.1f %9.2g %9.2g %7d %7d %s %7d %7d %s %7d %7d %s %4.2f" % (
                nd, "!" if d.included else "?", d.score, d.bias, math.exp(d.lnP) * domZ, math.exp(d.lnP) * Z,
                a.hmm_from, a.hmm_to, _ends(a.hmm_from, a.hmm_to, a.M), a.ali_from, a.ali_to,
                _ends(a.ali_from, a.ali_to, a.L), d.env_from, d.env_to, _ends(d.env_from, d.env_to, a.L), d.acc))
        if not show_alignments:
            out.append("")
            continue
        out += ["", "  Alignments for each domain:"]
        for nd, d in enumerate(doms, 1):
            out.append("  == domain %d  score: %.1f bits;  conditional E-value: %.2g" % (
                nd, d.score, math.exp(d.lnP) * domZ))
            out += alignment_lines(d.alignment, hmm_name, seq_name, textw=textw) + [""]
    if not reported:
        out += ["", "   [No targets detected that satisfy reporting thresholds]"]
    return out


def alignment_lines(ali: Alignment, hmm_name: str, seq_name: str, *, textw: int = 120,
                    min_aliwidth: int = 40) -> list[str]:
    """One domain's alignment display in blocks, as ``p7_nontranslated_alidisplay_Print`` prints it.

    Lines are at most ``textw`` characters when ``min_aliwidth`` columns fit (HMMER passes 40);
    ``textw <= 0`` prints one block.  CS and RF lines come first when the alignment has them.
    """
    n = len(ali.model_line)
    for label in ("match_line", "target_line", "pp_line", "rf_line", "cs_line"):
        line = getattr(ali, label)
        if line and len(line) != n:
            raise ValueError(f"alignment of {hmm_name} x {seq_name}: {label} has {len(line)} columns, "
                             f"model_line {n}")
    namew = max(len(hmm_name), len(seq_name))
    coordw = max(_textwidth(v) for v in (ali.hmm_from, ali.hmm_to, ali.ali_from, ali.ali_to))
    width = textw - namew - 2 * coordw - 5 if textw > 0 else n
    if width < n and width < min_aliwidth:
        width = min_aliwidth
    forward = ali.ali_from < ali.ali_to
    i1, k1 = ali.ali_from, ali.hmm_from
    pad = namew + coordw + 1
    out = []
    for pos in range(0, n, max(width, 1)):
        cols = slice(pos, pos + width)
        if pos > 0:
            out.append("")
        nk = len(ali.model_line[cols]) - ali.model_line[cols].count(".")
        ni = len(ali.target_line[cols]) - ali.target_line[cols].count("-")
        k2, i2 = k1 + nk - 1, (i1 + ni - 1 if forward else i1 - ni + 1)
        if ali.cs_line is not None:
            out.append("  %*s %s CS" % (pad, "", ali.cs_line[cols]))
        if ali.rf_line is not None:
            out.append("  %*s %s RF" % (pad, "", ali.rf_line[cols]))
        out.append("  %*s %*d %s %-*d" % (namew, hmm_name, coordw, k1, ali.model_line[cols], coordw, k2))
        out.append("  %*s %s" % (pad, " ", ali.match_line[cols]))
        if ni > 0:
            out.append("  %*s %*d %s %-*d" % (namew, seq_name, coordw, i1, ali.target_line[cols], coordw, i2))
        else:
            out.append("  %*s %*s %s %*s" % (namew, seq_name, coordw, "-", ali.target_line[cols], coordw, "-"))
        if ali.pp_line:
            out.append("  %*s %s PP" % (pad, "", ali.pp_line[cols]))
        k1 += nk
        i1 = i1 + ni if forward else i1 - ni
    return out


def _shown_name(name: str, accession: str, show_accessions: bool) -> str:
    """``--acc``: the accession where there is one, else the name (HMMER's ``showname``)."""
    return accession if show_accessions and accession else name


def query_domZ(qhits, domZ: float | None) -> float:
    """``p7_tophits_Threshold``: domZ is the query's number of reported hits unless set."""
    return float(sum(h.reported for h in qhits)) if domZ is None else float(domZ)


def seq_bias_bits(h: Hit) -> float:
    """HMMER's ``pre_score - score``, subtracted in single precision as its floats are."""
    return float(np.float32(h.pre_score) - np.float32(h.score))


def _ends(start: int, end: int, length: int) -> str:
    """``[`` / ``]`` where a range touches its sequence's ends, ``.`` elsewhere (``..``, ``[]``, ``.]``)."""
    return ("[" if start == 1 else ".") + ("]" if end == length else ".")


def _textwidth(n: int) -> int:
    """Easel's ``integer_textwidth``: digits of n, plus one for a sign; 0 for 0."""
    return 0 if n == 0 else len(str(abs(n))) + (n < 0)
