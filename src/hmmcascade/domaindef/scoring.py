"""Scores of the domain-defined pairs: the end of p7_domaindef and of p7_Pipeline, for a batch at once.

From the envelope kernel's results (:mod:`.envelopes`) and the multi-domain regions' null2
scores (:mod:`.multidomain`), in HMMER's float and double steps and in its order:

* null2 (:mod:`.null2`): each domain's correction and each target's null2 sum;
* the null2-corrected sequence score ``(fwd - (null + log(omega + exp(n2sum)))) / log 2`` (bits)
  and HMMER's domain-sum reconstruction, which replaces it where it is higher;
* domain scores (the envelope's score in the target's length model, its own null2 correction)
  and their P-values from the model's Forward tail (tau, lambda);
* alignment displays (:mod:`.alignment`): coordinates now, text lines when first read.

Contract: the scores of HMMER's hmmsearch, bit for bit, given the same envelope scores, null2
odds and traces; hmmcascade/kernels/domains.cl states where those agree to rounding.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from .. import stats
from ..logf import logf_array
from ..profiles import ProfileDB
from ..results import AlignmentLines
from .alignment import alignment_lines, display_tables
from .null2 import Null2Pieces, null2_odds_rows, null2_sums_host
from .numerics import flogsum_f32, sequential_fsum
from .records import EnsembleResults, EnvelopeJobs, EnvelopeResults, PairDomainsBatch, Regions, flat_regions
from .segments import segment_starts

__all__ = ["LOG2", "LOG_OMEGA", "score_domains", "sequence_scores"]

F32 = np.float32
LOG2 = 0.69314718055994529  # eslCONST_LOG2
LOG_OMEGA = math.log(float(F32(1.0 / 256.0)))  # log(bg->omega), double


def score_domains(db: ProfileDB, seqs, pair_seq: np.ndarray, pair_model: np.ndarray, fwd_nats: np.ndarray,
                  null_nats: np.ndarray, regions: "list | Regions", nexpected: np.ndarray,
                  ensemble_out: "dict | EnsembleResults", jobs: EnvelopeJobs, env: list,
                  null2=None) -> PairDomainsBatch:
    """Everything after the envelope kernel, for all pairs of a batch at once (p7_domaindef's
    per-envelope bookkeeping, p7_alidisplay_Create, and the end of p7_Pipeline).

    ``env[t]`` is the envelope kernel's result for ``jobs`` envelope t (None: decoding overflow,
    the envelope is skipped).  Float arithmetic as HMMER's, in its order: null2 scores are
    logf of the odds per residue; a domain's correction is their float sum over its envelope,
    left to right; the sequence's null2 sum is esl_vec_FSum over the whole target.  ``null2``
    takes those sums (a function of :class:`Null2Pieces`, as :func:`null2_sums_host`, the default).
    """
    n = len(pair_seq)
    tables = display_tables(db)
    nreg, reg = flat_regions(regions)  # reg: i, j, multi-domain
    reg_pair = np.repeat(np.arange(n), nreg)
    reg_first = segment_starts(nreg)  # flat index of each pair's first region
    nclustered = np.bincount(reg_pair, weights=reg[:, 2], minlength=n).astype(np.int64)
    J = len(jobs)
    nenvelopes = np.bincount(jobs.pair, minlength=n).astype(np.int64)

    # envelope kernel results of the jobs that have one
    if not isinstance(env, EnvelopeResults):
        env = EnvelopeResults.from_dicts(list(env)) if J else EnvelopeResults.from_pieces(0, [])
    vj = np.flatnonzero(env.valid)
    envsc, oasc = env.envsc[vj], env.oasc[vj]
    ok, ncol = env.shown[vj], env.ncol[vj]

    # kept domains (an envelope with a displayable alignment), in job order
    dv = np.flatnonzero(ok)  # into the valid jobs
    dj = vj[dv]  # into the jobs
    dpair = jobs.pair[dj]
    di, dj_end = jobs.i[dj], jobs.j[dj]
    kept = np.zeros(J, dtype=bool)
    kept[dj] = True

    # overlaps: a clustered envelope starting at or before the end of the last kept one of its region
    idx = np.where(kept & jobs.clustered, np.arange(J), -1)
    prev = np.concatenate([[-1], np.maximum.accumulate(idx)[:-1]]) if J else idx
    pv = np.maximum(prev, 0)
    same = (prev >= 0) & (jobs.pair[pv] == jobs.pair) & (jobs.region[pv] == jobs.region)
    last_j = np.where(same, jobs.j[pv], 0)
    noverlaps = np.bincount(jobs.pair[jobs.clustered & (jobs.i <= last_j)], minlength=n).astype(np.int64)

    # per pair: its domains; the null2 scores n2sc[] of residues first-region-start ..
    # last-region-end (zero elsewhere, as p7_domaindef's n2sc) for pairs with a domain
    ndom = np.bincount(dpair, minlength=n).astype(np.int64)
    has = ndom > 0
    dom_start = segment_starts(ndom)
    hp = np.flatnonzero(has)
    span_lo = np.zeros(n, dtype=np.int64)
    span_hi = np.zeros(n, dtype=np.int64)
    if len(reg):
        w = nreg > 0
        span_lo[w] = reg[reg_first[w], 0]
        span_hi[w] = reg[reg_first[w] + nreg[w] - 1, 1]
    span_len = np.where(has, span_hi - span_lo + 1, 0)
    span_off = np.zeros(n, dtype=np.int64)  # rows longest first: the sums below then read memory in order
    by_len = hp[np.argsort(-span_len[hp], kind="stable")]
    span_off[by_len] = segment_starts(span_len[by_len])
    seq_off = seqs.offsets.astype(np.int64)
    Lp = seqs.lengths[pair_seq].astype(np.int64)

    # single-domain envelopes: logf of the envelope's null2 odds of each residue
    single = np.flatnonzero(~jobs.clustered[vj] & has[jobs.pair[vj]])  # into the valid jobs
    sj = vj[single]
    s_pair, s_len = jobs.pair[sj], jobs.j[sj] - jobs.i[sj] + 1
    # logf (the C library's, as HMMER) of each envelope's KP odds, then looked up per residue
    logodds = logf_array(null2_odds_rows(env.null2[vj[single]]))
    # multi-domain regions: the clustering's scores
    multi_r = np.flatnonzero((reg[:, 2] == 1) & has[reg_pair])  # flat region numbers
    m_pair = reg_pair[multi_r]
    m_vals = [r[0] for r in ensemble_out.of_flat(multi_r)] if isinstance(ensemble_out, EnsembleResults) else \
        [ensemble_out[(p, r)][0] for p, r in zip(m_pair.tolist(), (multi_r - reg_first[m_pair]).tolist())]
    m_len = np.array([len(v) for v in m_vals], dtype=np.int64)
    pieces = Null2Pieces(
        total=int(span_len.sum()), residues=seqs.residues, logodds=logodds,
        values=np.concatenate(m_vals).astype(F32, copy=False) if m_vals else np.zeros(0, F32),
        row=np.concatenate([np.arange(len(sj), dtype=np.int32), np.full(len(m_len), -1, dtype=np.int32)]),
        src=np.concatenate([seq_off[pair_seq[s_pair]] + jobs.i[sj] - 1, segment_starts(m_len)]),
        dst=np.concatenate([span_off[s_pair] + jobs.i[sj] - span_lo[s_pair],
                            span_off[m_pair] + reg[multi_r, 0] - span_lo[m_pair]]),
        len=np.concatenate([s_len, m_len]).astype(np.int64),
        # each kept domain's correction: its envelope's null2 scores summed in order
        dom_start=span_off[dpair] + di - span_lo[dpair], dom_len=(dj_end - di + 1).astype(np.int64),
        # the target's null2 sum: esl_vec_FSum over residues 0..L
        row_start=span_off[hp], row_len=span_len[hp], row_tz=(Lp - span_hi)[hp])
    corr, n2sum = (null2 or null2_sums_host)(pieces)

    # scores (the end of p7_Pipeline), in HMMER's float and double steps
    f32 = F32
    env_f = envsc[dv].astype(F32)
    dlen = dj_end - di + 1
    fwd = fwd_nats[hp].astype(F32)
    nul = null_nats[hp].astype(F32)
    L = Lp[hp]
    with np.errstate(over="ignore", invalid="ignore"):
        seqbias = flogsum_f32(f32(0.0), (LOG_OMEGA + n2sum.astype(np.float64)).astype(F32))
        use = (env_f - corr).astype(F32) > 0.0
        dsl = dom_start[hp]
        nd = ndom[hp]
        sum_env = sequential_fsum(np.where(use, env_f, f32(0.0)).astype(F32), dsl, nd, from_zero=True)
        sbias = sequential_fsum(np.where(use, corr, f32(0.0)).astype(F32), dsl, nd, from_zero=True)
        Ld = np.bincount(dpair[use], weights=dlen[use], minlength=n).astype(np.int64)[hp]
        sbias = flogsum_f32(f32(0.0), (LOG_OMEGA + sbias.astype(np.float64)).astype(F32))
        ratio = (L.astype(F32) / (L + 3).astype(F32)).astype(F32)
        uniq, inv = np.unique(ratio, return_inverse=True)
        lratio = np.array([math.log(float(v)) for v in uniq.tolist()], dtype=np.float64)[inv]
        sum_score = (sum_env.astype(np.float64) + (L - Ld).astype(np.float64) * lratio).astype(F32)
        pre2_score = ((sum_score - nul).astype(np.float64) / LOG2).astype(F32)
        sum_score = ((sum_score - (nul + sbias).astype(F32)).astype(np.float64) / LOG2).astype(F32)
        seq_score, pre_score = sequence_scores(fwd, nul, seqbias, sum_score, pre2_score, Ld > 0)

        # domain scores
        where_hp = np.zeros(n, dtype=np.int64)
        where_hp[hp] = np.arange(len(hp))
        dh = where_hp[dpair]
        bits = (env_f.astype(np.float64) + (L[dh] - dlen).astype(np.float64) * lratio[dh]).astype(F32)
        dombias = flogsum_f32(f32(0.0), (LOG_OMEGA + corr.astype(np.float64)).astype(F32))
        dscore = ((bits - (nul[dh] + dombias).astype(F32)).astype(np.float64) / LOG2).astype(F32)
        mdl = pair_model[dpair]
        tau = tables.evparams[mdl, 4].astype(np.float64)
        lam = tables.evparams[mdl, 5].astype(np.float64)
        dlnP = stats.exp_logsurv(dscore, tau, lam)

    # alignment displays: coordinates now, the text lines from the displayed columns when first read
    ncol = ncol[dv]
    lines = AlignmentLines.deferred(partial(_alignment_lines_of, env, tables, seqs.residues, ncol, mdl,
                                            seq_off[pair_seq[dpair]] + di - 2))
    hmm_from, hmm_to = env.first[:, 1], env.last[:, 1]  # (the shown jobs, in job order: the domains')
    r_from, r_to = env.first[:, 2].astype(np.int64), env.last[:, 2].astype(np.int64)
    dom = {
        "env_from": di, "env_to": dj_end, "score": dscore.astype(np.float64),
        "bias": dombias.astype(np.float64) * 1.44269504088896341,  # printed as bits: dombias * eslCONST_LOG2R
        "lnP": dlnP, "acc": oasc[dv] / (1.0 + np.abs(dj_end - di)), "env_nats": envsc[dv],
        "correction_nats": corr.astype(np.float64), "hmm_from": hmm_from, "hmm_to": hmm_to,
        "ali_from": r_from + di - 1, "ali_to": r_to + di - 1, "M": tables.M[mdl], "L": Lp[dpair],
    }

    def per_pair(values, dtype):
        out = np.zeros(n, dtype=dtype)
        out[hp] = values
        return out

    # what the sequence score is made of, kept per pair: the search's rescoring (hmmcascade.rescore) makes
    # it again from a Forward score in HMMER's order
    parts = {"fwd": per_pair(fwd, F32), "nul": per_pair(nul, F32), "seqbias": per_pair(seqbias, F32),
             "sum_score": per_pair(sum_score, F32), "pre2_score": per_pair(pre2_score, F32),
             "sum_ok": per_pair(Ld > 0, bool)}
    return PairDomainsBatch(
        has=has, seq_score=per_pair(seq_score, np.float64), pre_score=per_pair(pre_score, np.float64),
        sum_score=per_pair(sum_score, np.float64), nexpected=np.asarray(nexpected, dtype=F32).astype(np.float64),
        nregions=nreg, nclustered=nclustered, noverlaps=noverlaps, nenvelopes=nenvelopes, dom_start=dom_start,
        ndom=ndom, dom=dom, lines=lines, seq_parts=parts)


def sequence_scores(fwd, nul, seqbias, sum_score, pre2_score, sum_ok) -> tuple[np.ndarray, np.ndarray]:
    """The end of p7_Pipeline: the null2-corrected sequence score and the pre-score (bits, float32) from
    the Forward parser's score ``fwd``, the null1 score ``nul`` and the null2 bias ``seqbias`` (nats,
    float32); where the domains' sum (``sum_ok``: domains with a positive score cover residues) scores
    higher (``sum_score``, its pre-score ``pre2_score``, bits), those instead.  p7_Pipeline's floats: the
    differences in float, then divided by eslCONST_LOG2 in double."""
    f32 = F32
    fwd, nul, seqbias = (np.asarray(a, dtype=f32) for a in (fwd, nul, seqbias))
    with np.errstate(over="ignore", invalid="ignore"):
        pre_score = ((fwd - nul).astype(np.float64) / LOG2).astype(f32)
        seq_score = ((fwd - (nul + seqbias).astype(f32)).astype(np.float64) / LOG2).astype(f32)
        override = np.asarray(sum_ok, dtype=bool) & (np.asarray(sum_score, dtype=f32) > seq_score)
        seq_score = np.where(override, np.asarray(sum_score, dtype=f32), seq_score).astype(f32)
        pre_score = np.where(override, np.asarray(pre2_score, dtype=f32), pre_score).astype(f32)
    return seq_score, pre_score


def _alignment_lines_of(env: EnvelopeResults, tables, residues, ncol, model, res_base) -> dict:
    """:func:`alignment_lines` of the envelope results' displayed columns (put together now)."""
    return alignment_lines(tables, residues, *env.cols, ncol, model, res_base)
