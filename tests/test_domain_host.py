"""The vectorised host code after the envelope kernel equals the per-domain code it replaced.

``hmmcascade.domaindef.scoring.score_domains`` (null2 scores, corrections, sequence and domain
scores, alignment displays for a whole batch at once), ``cascade.make_hits`` /
``threshold_hits`` / ``sort_hits`` and the lazily decoded ``Alignment`` lines are checked
against the earlier per-pair, per-domain, per-column implementations, kept below as
references (``_ref_*``): on the embedded default data (every record field, every alignment
line, bit for bit) and on synthetic inputs for the float helpers.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle

import numpy as np
import pytest

from hmmcascade import cascade, output, stats
from hmmcascade.domaindef import alignment, engine
from hmmcascade.domaindef.alignment import AMINO, ST_B, ST_D, ST_E, ST_I, ST_M, encode_pp
from hmmcascade.domaindef.envelopes import EnvelopeRescorer
from hmmcascade.domaindef.null2 import null2_odds_rows
from hmmcascade.domaindef.numerics import (F32, flogsum, flogsum_f32, kahan_fsum_rows, kahan_fsum_segments,
                                           sequential_fsum)
from hmmcascade.domaindef.records import (EnsembleResults, EnvelopeResults, PairDomains, PairDomainsBatch, Regions,
                                         envelope_jobs)
from hmmcascade.domaindef.scoring import LOG2, LOG_OMEGA, score_domains
from hmmcascade.logf import logf
from hmmcascade.profiles import KP
from hmmcascade.results import Alignment, AlignmentLines, Domain, Hit, hit_to_dict, load_hits, save_hits


# ---------------------------------------------------------------- reference implementations
# (the code of hmmcascade 1e6f26c: DomainEngine._alignment, _score, the envelope-and-scoring
# block of DomainEngine.run, kahan_fsum_rows, null2_odds, cascade.make_hits/threshold_hits/sort_hits)


def _ref_kahan_fsum_rows(rows):
    if not rows:
        return np.zeros(0, dtype=F32)
    n = max(len(r) for r in rows)
    a = np.zeros((len(rows), n), dtype=F32)
    for t, r in enumerate(rows):
        a[t, : len(r)] = r
    lengths = np.array([len(r) for r in rows])
    s = np.zeros(len(rows), dtype=F32)
    c = np.zeros(len(rows), dtype=F32)
    for i in range(n):
        live = lengths > i
        y = a[:, i] - c
        t = s + y
        cn = (t - s) - y
        s = np.where(live, t, s)
        c = np.where(live, cn, c)
    return s


def _ref_null2_odds(weights):
    from hmmcascade.domaindef.traces import average_degenerate

    n2 = np.ones(KP, dtype=F32)
    n2[:20] = weights[:20]
    return average_degenerate(n2)


def _ref_alignment(db, res, i0, mdl, dsq, L):
    st, kk, ii, pp = res["st"], res["k"], res["i"], res["pp"]
    b = np.flatnonzero(st == ST_B)
    if not len(b):
        return None
    ms = np.flatnonzero(st == ST_M)
    ms1 = ms[ms > b[0]]
    if not len(ms1):
        return None
    z1 = int(ms1[0])
    e = np.flatnonzero((st == ST_E) & (np.arange(len(st)) > z1))
    zend = int(e[0]) if len(e) else len(st) - 1
    ms2 = ms[ms <= zend]
    z2 = int(ms2[-1])
    seg = slice(z1, z2 + 1)
    s, k, i, p = st[seg], kk[seg], ii[seg].astype(np.int64) + (i0 - 1), pp[seg]
    cons = db.consensus[mdl]
    M = int(db.M[mdl])
    odds = db.emission(db.fwd_msc_f32, mdl)
    model_chars, mline, aseq = [], [], []
    for z in range(len(s)):
        if s[z] == ST_M:
            x = int(dsq[i[z] - 1])
            c = cons[k[z] - 1]
            model_chars.append(c)
            sym = AMINO[x]
            if c.upper() == sym:
                mline.append(c)
            elif odds[x, k[z] - 1] > 1.0:
                mline.append("+")
            else:
                mline.append(" ")
            aseq.append(sym.upper())
        elif s[z] == ST_I:
            x = int(dsq[i[z] - 1])
            model_chars.append(".")
            mline.append(" ")
            aseq.append(AMINO[x].lower())
        else:
            model_chars.append(cons[k[z] - 1])
            mline.append(" ")
            aseq.append("-")
    ppl = np.frombuffer(encode_pp(p).encode(), dtype=np.uint8).copy()
    ppl[s == ST_D] = ord(".")
    rf = db.rf[mdl] if len(db.rf[mdl]) else None
    cs = db.cs[mdl] if len(db.cs[mdl]) else None
    rf_line = "".join("." if s[z] == ST_I else rf[k[z] - 1] for z in range(len(s))) if rf else None
    cs_line = "".join("." if s[z] == ST_I else cs[k[z] - 1] for z in range(len(s))) if cs else None
    return Alignment(hmm_from=int(k[0]), hmm_to=int(k[-1]), ali_from=int(i[0]), ali_to=int(i[-1]),
                     model_line="".join(model_chars), match_line="".join(mline), target_line="".join(aseq),
                     pp_line=ppl.tobytes().decode(), M=M, L=L, rf_line=rf_line, cs_line=cs_line)


def _ref_score(db, doms, n2sum, L, fwdsc, nullsc, mdl, **counts):
    f32 = F32
    fwdsc, nullsc = f32(fwdsc), f32(nullsc)
    seqbias = f32(n2sum)
    seqbias = f32(flogsum(0.0, LOG_OMEGA + float(seqbias)))
    # (p7_Pipeline's float differences, divided by eslCONST_LOG2 in double)
    pre_score = f32(float(f32(fwdsc - nullsc)) / LOG2)
    seq_score = f32(float(f32(fwdsc - f32(nullsc + seqbias))) / LOG2)
    sum_score, sbias, Ld = f32(0.0), f32(0.0), 0
    for d in doms:
        if f32(f32(d.env_nats) - f32(d.correction_nats)) > 0.0:
            sum_score = f32(sum_score + f32(d.env_nats))
            Ld += d.env_to - d.env_from + 1
            sbias = f32(sbias + f32(d.correction_nats))
    sbias = f32(flogsum(0.0, LOG_OMEGA + float(sbias)))
    lratio = math.log(float(f32(f32(L) / f32(L + 3))))
    sum_score = f32(float(sum_score) + (L - Ld) * lratio)
    pre2_score = f32(float(f32(sum_score - nullsc)) / LOG2)
    sum_score = f32(float(f32(sum_score - f32(nullsc + sbias))) / LOG2)
    if Ld > 0 and sum_score > seq_score:
        seq_score, pre_score = sum_score, pre2_score
    tau, lam = (float(v) for v in db.evparams[mdl, 4:6])
    for d in doms:
        Ldom = d.env_to - d.env_from + 1
        bits = f32(float(f32(d.env_nats)) + (L - Ldom) * lratio)
        dombias = f32(flogsum(0.0, LOG_OMEGA + float(f32(d.correction_nats))))
        d.bias = float(dombias) * 1.44269504088896341
        d.score = float(f32(float(f32(bits - f32(nullsc + dombias))) / LOG2))
        d.lnP = float(stats.exp_logsurv(np.float32(d.score), tau, lam))
    return PairDomains(domains=doms, seq_score=float(seq_score), pre_score=float(pre_score),
                       sum_score=float(sum_score), **counts)


def _ref_block(db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected, ensemble_out, env):
    """The envelope-and-scoring block of DomainEngine.run after the envelope kernel."""
    n = len(pair_seq)
    if isinstance(regions, Regions):  # (the search's regions, as arrays)
        regions = regions.lists()
    jobs = []
    for p in range(n):
        for r, (i, j, is_multi) in enumerate(regions[p]):
            if is_multi:
                for (i2, j2) in ensemble_out[(p, r)][1]:
                    jobs.append((p, r, i2, j2, True))
            else:
                jobs.append((p, r, i, j, False))
    out = [None] * n
    pending = []
    per_pair = {}
    for t, job in enumerate(jobs):
        per_pair.setdefault(job[0], []).append((job, env[t]))
    for p in range(n):
        if not regions[p]:
            continue
        s, mdl = int(pair_seq[p]), int(pair_model[p])
        Lseq = int(seqs.lengths[s])
        dsq = seqs.residues[seqs.offsets[s]: seqs.offsets[s] + Lseq]
        n2sc = np.zeros(Lseq + 1, dtype=F32)
        for r, (i, j, is_multi) in enumerate(regions[p]):
            if is_multi:
                n2sc[i: j + 1] = ensemble_out[(p, r)][0]
        doms, last_j2, noverlaps = [], {}, 0
        nenv = 0
        for (job, res) in per_pair.get(p, []):
            _, r, i, j, done = job
            nenv += 1
            if done:
                if i <= last_j2.get(r, 0):
                    noverlaps += 1
            if res is None:
                continue
            if not done:
                odds = _ref_null2_odds(res["null2"])
                # the C library's logf, one call per residue (HMMER's null2 scores)
                n2sc[i: j + 1] = [logf(v) for v in odds[dsq[i - 1: j]].astype(F32)]
            corr = np.add.accumulate(n2sc[i: j + 1], dtype=F32)[-1]
            ali = _ref_alignment(db, res, i, mdl, dsq, Lseq)
            if ali is None:
                continue
            if done:
                last_j2[r] = j
            doms.append(Domain(env_from=i, env_to=j, score=0.0, bias=0.0, lnP=0.0, c_evalue=0.0, i_evalue=0.0,
                               acc=float(res["oasc"]) / (1.0 + abs(j - i)), alignment=ali,
                               env_nats=res["envsc"], correction_nats=float(corr)))
        nclustered = sum(1 for x in regions[p] if x[2])
        if not doms:
            continue
        pending.append((p, doms, n2sc, Lseq, mdl, dict(nexpected=float(nexpected[p]), nregions=len(regions[p]),
                                                      nclustered=nclustered, noverlaps=noverlaps, nenvelopes=nenv)))
    sums = _ref_kahan_fsum_rows([x[2] for x in pending])
    for (p, doms, n2sc, Lseq, mdl, counts), seqsum in zip(pending, sums):
        out[p] = _ref_score(db, doms, float(seqsum), Lseq, float(fwd_nats[p]), float(null_nats[p]), mdl, **counts)
    return out


def _ref_cutoffs(db, th, m):
    if not th.cut:
        return None
    col = cascade.CUTOFF_COLUMNS[th.cut]
    return float(db.cutoffs[m, col]), float(db.cutoffs[m, col + 1])


# p7_pli_TargetReportable / TargetIncludable / DomReportable / DomIncludable for one hit, as
# HMMER writes them: the reference the vectorised thresholds are checked against
def _target_reportable(th, score: float, lnP: float, Z: float, cutoffs=None) -> bool:
    """p7_pli_TargetReportable (``cutoffs``: the model's (sequence, domain) cutoff pair)."""
    if th.cut:
        return score >= cutoffs[0]
    if th.T is not None:
        return score >= th.T
    return math.exp(lnP) * Z <= th.E


def _target_includable(th, score: float, lnP: float, Z: float, cutoffs=None) -> bool:
    if th.cut:
        return score >= cutoffs[0]
    if th.incT is not None:
        return score >= th.incT
    return math.exp(lnP) * Z <= th.incE


def _domain_reportable(th, score: float, lnP: float, domZ: float, cutoffs=None) -> bool:
    if th.cut:
        return score >= cutoffs[1]
    if th.domT is not None:
        return score >= th.domT
    return math.exp(lnP) * domZ <= th.domE


def _domain_includable(th, score: float, lnP: float, domZ: float, cutoffs=None) -> bool:
    if th.cut:
        return score >= cutoffs[1]
    if th.incdomT is not None:
        return score >= th.incdomT
    return math.exp(lnP) * domZ <= th.incdomE


def _survivors(out: dict, domains) -> cascade.Survivors:
    """The test's pairs ({"seq", "model"}) as the search hands them to make_hits."""
    return cascade.Survivors(None, out["seq"], out["model"], domains=domains)


def _ref_make_hits(db, seqs, index, out, th, Z):
    hits = []
    for p, pd in enumerate(out.get("domains", [])):
        if pd is None:
            continue
        m = int(out["model"][p])
        t = int(index[out["seq"][p]])
        tau, lam = (float(v) for v in db.evparams[m, 4:6])
        lnP = float(stats.exp_logsurv(np.float32(pd.seq_score), tau, lam))
        cut = _ref_cutoffs(db, th, m)
        if not _target_reportable(th, pd.seq_score, lnP, Z, cut):
            continue
        best = 0
        for d, dom in enumerate(pd.domains):
            if dom.score > pd.domains[best].score:
                best = d
        h = Hit(model=m, target=t, model_name=str(db.names[m]), model_acc=str(db.accessions[m]),
                model_length=int(db.M[m]), target_name=str(seqs.names[t]), target_acc="",
                target_desc=str(seqs.descriptions[t]), target_length=int(seqs.lengths[t]),
                score=pd.seq_score, pre_score=pd.pre_score,
                bias=float(np.float32(pd.pre_score) - np.float32(pd.seq_score)), lnP=lnP,
                evalue=math.exp(lnP) * Z, nexpected=pd.nexpected, nregions=pd.nregions,
                nclustered=pd.nclustered, noverlaps=pd.noverlaps, nenvelopes=pd.nenvelopes,
                best_domain=best, domains=pd.domains)
        if th.cut:
            h.reported = True
            h.included = _target_includable(th, h.score, lnP, Z, cut)
            for dom in h.domains:
                dom.reported = _domain_reportable(th, dom.score, dom.lnP, 0.0, cut)
                dom.included = dom.reported and _domain_includable(th, dom.score, dom.lnP, 0.0, cut)
        hits.append(h)
    return hits


def _ref_threshold_hits(hits, th, Z):
    by_model = {}
    for h in hits:
        by_model.setdefault(h.model, []).append(h)
    for m, group in by_model.items():
        if not th.cut:
            for h in group:
                h.reported = _target_reportable(th, h.score, h.lnP, Z)
                h.included = h.reported and _target_includable(th, h.score, h.lnP, Z)
        domZ = th.domZ if th.domZ is not None else float(sum(h.reported for h in group))
        for h in group:
            h.evalue = math.exp(h.lnP) * Z
            for dom in h.domains:
                dom.c_evalue = math.exp(dom.lnP) * domZ
                dom.i_evalue = math.exp(dom.lnP) * Z
                if not th.cut:
                    dom.reported = h.reported and _domain_reportable(th, dom.score, dom.lnP, domZ)
                    dom.included = h.included and _domain_includable(th, dom.score, dom.lnP, domZ)
            if h.noverlaps:
                for a in range(len(h.domains)):
                    for b in range(a + 1, len(h.domains)):
                        d1, d2 = h.domains[a], h.domains[b]
                        if d1.ali_from == d2.ali_from and d1.ali_to == d2.ali_to:
                            drop = d2 if d1.score >= d2.score else d1
                            drop.reported = drop.included = False


def _ref_sort_key(h, inc_by_E):
    first = h.domains[0].alignment if h.domains else None
    iali, jali = (first.ali_from, first.ali_to) if first is not None else (0, 0)
    return (h.lnP if inc_by_E else -h.score, h.target_name, 0 if iali < jali else 1, iali, h.target)


def _ref_sort_hits(hits, th):
    by_model = {}
    for h in hits:
        by_model.setdefault(h.model, []).append(h)
    inc_by_E = th.cut is None and th.incT is None
    return [h for m in sorted(by_model) for h in sorted(by_model[m], key=lambda h: _ref_sort_key(h, inc_by_E))]


# ---------------------------------------------------------------- the default data, old vs new


@pytest.fixture(scope="module")
def captured(default_db, default_seqs, device):
    """A search of the default data that records every ``score_domains`` call (inputs and result).

    The search passes the envelope results as arrays (``envelopes(traces=False)``); each is run
    again with whole traces (a dict per job, what the reference code reads), and the recorded
    inputs carry those dicts.  The (arrays, dicts) pairs go to :data:`_ENVELOPE_PAIRS`."""
    calls = []
    real = score_domains
    real_env = EnvelopeRescorer.envelopes
    pairs = {}

    def env_spy(self, *a, **kw):
        out = real_env(self, *a, **kw)
        if kw.get("traces") is False:
            arrays = out() if kw.get("lazy") else out  # (lazy: the search's way, put together later)
            pairs[id(arrays)] = (arrays, real_env(self, *a, **dict(kw, traces=True, lazy=False)))
            return (lambda: arrays) if kw.get("lazy") else arrays
        return out

    def spy(*args, **kw):  # (kw: the device's null2 sums; the calls are replayed with the host's)
        out = real(*args, **kw)
        arrays, dicts = pairs.get(id(args[-1]), (None, args[-1]))
        if arrays is not None:
            _ENVELOPE_PAIRS.append((args, arrays, dicts, out))
        calls.append((args[:-1] + (dicts,), out))
        return out

    _ENVELOPE_PAIRS.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "score_domains", spy)
        mp.setattr(EnvelopeRescorer, "envelopes", env_spy)
        res = cascade.search(default_db, default_seqs, device, cascade.Thresholds(Z=2000))
    assert calls and _ENVELOPE_PAIRS
    return res, calls


_ENVELOPE_PAIRS: list = []


def test_envelope_arrays_equal_dicts(captured):
    """envelopes(traces=False) (arrays, displayed columns cut from each launch's output) = the dicts
    of envelopes(traces=True) turned into arrays; score_domains gives the same records from both."""
    for args, arrays, dicts, out in _ENVELOPE_PAIRS:
        ref = EnvelopeResults.from_dicts(dicts)
        assert isinstance(arrays, EnvelopeResults) and len(arrays) == len(dicts) > 100
        for f in ("valid", "envsc", "oasc", "null2", "shown", "ncol"):
            assert np.array_equal(getattr(arrays, f), getattr(ref, f)), f
            assert getattr(arrays, f).dtype == getattr(ref, f).dtype, f
        for a, b in zip(arrays.cols, ref.cols):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        assert arrays.valid.sum() > arrays.shown.sum() * 0.9 and arrays.shown.sum() > 100
        fresh = score_domains(*args)  # (the search's records have been thresholded since)
        again = score_domains(*args[:-1], dicts)
        assert [None if a is None else (a.seq_score, [_domain_dict(d) for d in a.domains]) for a in fresh] == \
            [None if b is None else (b.seq_score, [_domain_dict(d) for d in b.domains]) for b in again]


def _domain_dict(d: Domain) -> dict:
    return {k: getattr(d, k) for k in Domain.__dataclass_fields__ if k != "alignment"} | {
        k: getattr(d.alignment, k) for k in Alignment.__dataclass_fields__}


def _with_rf(db):
    """The database with a made-up RF line on every other model (the default models have none)."""
    rf = ["".join("xX.-"[(k * 7 + m) % 4] for k in range(int(M))) if m % 2 == 0 else ""
          for m, M in enumerate(db.M)]
    return dataclasses.replace(db, rf=np.asarray(rf, dtype=str))


@pytest.mark.parametrize("rf", [False, True], ids=["db", "db_with_rf"])
def test_score_domains_equals_per_domain_code(captured, rf):
    """Every pair's counts and scores, every domain's fields and alignment lines, bit for bit."""
    _, calls = captured
    npairs = ndoms = nclustered = noverlap_pairs = nrf = 0
    for args, _ in calls:
        if rf:
            args = (_with_rf(args[0]),) + args[1:]
        db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected, ensemble_out, jobs, env = args
        ref = _ref_block(db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected, ensemble_out, env)
        new = score_domains(*args)  # fresh records (the search's have been thresholded)
        assert isinstance(new, PairDomainsBatch) and len(new) == len(ref)
        for p, (a, b) in enumerate(zip(ref, new)):
            assert (a is None) == (b is None), p
            if a is None:
                continue
            for f in PairDomains.__dataclass_fields__:
                if f != "domains":
                    assert getattr(a, f) == getattr(b, f) and type(getattr(a, f)) is type(getattr(b, f)), (p, f)
            assert [_domain_dict(d) for d in a.domains] == [_domain_dict(d) for d in b.domains], p
            npairs += 1
            ndoms += len(a.domains)
            nclustered += a.nclustered
            noverlap_pairs += a.noverlaps > 0
            nrf += sum(d.alignment.rf_line is not None for d in b.domains)
    assert npairs > 150 and ndoms > 300 and nclustered > 20 and noverlap_pairs >= 1
    assert (nrf > 100) if rf else (nrf == 0)


def test_skipped_envelopes_and_empty_batches(captured):
    """Envelopes the kernel could not decode (None: skipped, yet counted in nenvelopes and overlaps),
    all of them, and pairs without regions."""
    _, calls = captured
    args = calls[0][0]
    db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected, ensemble_out, jobs, env = args
    clustered = np.flatnonzero(jobs.clustered)
    for drop in (set(range(0, len(env), 7)) | set(clustered[::2].tolist()), set(range(len(env)))):
        env2 = [None if t in drop else r for t, r in enumerate(env)]
        ref = _ref_block(db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected, ensemble_out, env2)
        new = list(score_domains(*args[:10], env2))
        assert [None if a is None else (a.nenvelopes, a.noverlaps, a.seq_score, [_domain_dict(d) for d in a.domains])
                for a in ref] == [None if b is None else (b.nenvelopes, b.noverlaps, b.seq_score,
                                                          [_domain_dict(d) for d in b.domains]) for b in new]
        assert any(a is not None for a in ref) == (len(drop) < len(env))
    assert isinstance(regions, Regions)  # (the search's form)
    for empty in ([[] for _ in pair_seq], Regions(np.zeros(len(pair_seq), np.int64), np.zeros((0, 3), np.int64))):
        out = score_domains(db, seqs, pair_seq, pair_model, fwd_nats, null_nats, empty, nexpected, {},
                            envelope_jobs(empty, {}), [])
        assert len(out) == len(pair_seq) and not any(out)
    assert cascade.make_hits(db, seqs, np.arange(len(seqs)), cascade.Survivors(None, pair_seq, pair_model, domains=out),
                             cascade.Thresholds(), 2000.0) == []


@pytest.mark.parametrize("th", [cascade.Thresholds(Z=2000), cascade.Thresholds(Z=2000, E=1e-3, domE=1e-4, incT=30.0),
                                cascade.Thresholds(Z=2000, T=20.0, domT=15.0, incdomT=25.0, domZ=7.0),
                                cascade.Thresholds(Z=2000, cut="ga"), cascade.Thresholds(Z=2000, cut="tc")],
                         ids=["default", "E", "T", "cut_ga", "cut_tc"])
def test_hit_records_equal_per_hit_code(captured, th):
    """make_hits, threshold_hits and sort_hits: the same records, flags, E-values and order."""
    _, calls = captured
    ours, theirs = [], []
    for args, new in calls:
        db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected, ensemble_out, jobs, env = args
        ref = _ref_block(db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected, ensemble_out, env)
        out = {"seq": pair_seq, "model": pair_model}
        index = np.arange(len(seqs))
        theirs += _ref_make_hits(db, seqs, index, dict(out, domains=ref), th, 2000.0)
        fresh = score_domains(*args)  # records of its own (the flags are set in place)
        ours += cascade.make_hits(db, seqs, index, _survivors(out, fresh), th, 2000.0)
    _ref_threshold_hits(theirs, th, 2000.0)
    cascade.threshold_hits(ours, th, 2000.0)
    theirs, ours = _ref_sort_hits(theirs, th), cascade.sort_hits(ours, th)
    assert len(ours) > 50
    assert [hit_to_dict(h) for h in ours] == [hit_to_dict(h) for h in theirs]
    assert sum(h.reported for h in ours) > 0


@pytest.mark.parametrize("th", [cascade.Thresholds(Z=2000), cascade.Thresholds(Z=2000, E=1e-3, domE=1e-4, incT=30.0),
                                cascade.Thresholds(Z=2000, cut="ga")], ids=["default", "E", "cut_ga"])
def test_threshold_from_key_columns_equals_per_record(captured, th):
    """The search's way (make_hits' key arrays, domain flags set in each batch's DomainSource, the
    records' Domain objects made afterwards when first read) gives the records threshold_hits
    gives from the records themselves, #h74 duplicates included."""
    _, calls = captured
    ours, theirs, keys = [], [], []
    for args, new in calls:
        db, seqs, pair_seq, pair_model = args[:4]
        out = {"seq": pair_seq, "model": pair_model}
        index = np.arange(len(seqs))
        theirs += cascade.make_hits(db, seqs, index, _survivors(out, score_domains(*args)), th, 2000.0)
        k = {}
        ours += cascade.make_hits(db, seqs, index, _survivors(out, score_domains(*args)), th, 2000.0, keys=k)
        keys.append(k)
    cols = cascade.key_columns(keys)
    assert cols is not None and len(cols["sources"]) == len(calls)
    cascade.threshold_hits(theirs, th, 2000.0)
    cascade.threshold_hits(ours, th, 2000.0, db, flagged=True, cols=cols)
    assert not any(s._lists is not None for s in cols["sources"])  # (no record was read)
    assert [hit_to_dict(h) for h in ours] == [hit_to_dict(h) for h in theirs]
    assert sum(d.reported for h in ours for d in h.domains) > 0
    assert cols["noverlaps"].any()  # (the #h74 workaround had overlaps to look at)


def test_make_hits_takes_a_list_of_pair_domains(captured, default_db):
    """A plain list of PairDomains (the reference block's result) gives the same hits as the batch."""
    _, calls = captured
    args, new = calls[0]
    db, seqs, pair_seq, pair_model = args[:4]
    th = cascade.Thresholds(Z=2000)
    out = {"seq": pair_seq, "model": pair_model}
    a = cascade.make_hits(db, seqs, np.arange(len(seqs)), _survivors(out, score_domains(*args)), th, 2000.0)
    b = cascade.make_hits(db, seqs, np.arange(len(seqs)), _survivors(out, list(score_domains(*args))),
                          th, 2000.0)
    assert len(a) > 100 and [hit_to_dict(h) for h in a] == [hit_to_dict(h) for h in b]


def test_search_records_survive_save_load_and_pickle(captured, tmp_path):
    """Lazily decoded alignments: JSON and pickle round trips keep every line; the search's records
    equal those rebuilt from the saved file."""
    res, _ = captured
    recs = res.records[:40]
    save_hits(tmp_path / "hits.json.gz", recs)
    loaded, _ = load_hits(tmp_path / "hits.json.gz")
    assert [hit_to_dict(h) for h in loaded] == [hit_to_dict(h) for h in recs]
    again = pickle.loads(pickle.dumps(res.records[40:80]))
    assert [hit_to_dict(h) for h in again] == [hit_to_dict(h) for h in res.records[40:80]]
    assert not any(hasattr(d.alignment, "_lines") for h in again for d in h.domains)


# ---------------------------------------------------------------- helpers on synthetic data


def _messy_floats(rng, n):
    """float32 values of mixed signs and magnitudes, so compensations are rarely zero."""
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-4, 4, n)).astype(F32)


def test_kahan_fsum_segments_equals_rows_with_trailing_zeros():
    rng = np.random.default_rng(7)
    rows, flat, starts, lengths, tails = [], [], [], [], []
    at = 0
    for _ in range(300):
        n = int(rng.integers(1, 60))
        v = _messy_floats(rng, n)
        v[rng.random(n) < 0.2] = 0.0
        tail = int(rng.integers(0, 5))
        rows.append(np.concatenate([v, np.zeros(tail, F32)]))
        flat.append(v)
        starts.append(at)
        lengths.append(n)
        tails.append(tail)
        at += n
    ref = _ref_kahan_fsum_rows(rows)
    got = kahan_fsum_segments(np.concatenate(flat), np.array(starts), np.array(lengths),
                              trailing_zeros=np.array(tails))
    assert got.dtype == F32 and np.array_equal(got.view(np.int32), ref.view(np.int32))
    assert np.array_equal(kahan_fsum_rows(rows).view(np.int32), ref.view(np.int32))
    # the compensation matters here: plain float sums differ for some rows
    assert any(np.add.accumulate(r, dtype=F32)[-1] != k for r, k in zip(rows, ref))


def test_sequential_fsum_adds_left_to_right():
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 300, 200)
    values = _messy_floats(rng, int(lengths.sum()))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    ref = np.array([np.add.accumulate(values[a: a + n], dtype=F32)[-1] for a, n in zip(starts, lengths)], F32)
    assert np.array_equal(sequential_fsum(values, starts, lengths).view(np.int32), ref.view(np.int32))
    zero = np.array([F32(0.0) + F32(values[a]) for a in starts], F32)
    assert np.array_equal(sequential_fsum(values, starts, np.ones_like(lengths), from_zero=True), zero)
    assert any(np.sum(values[a: a + n], dtype=F32) != r for a, n, r in zip(starts, lengths, ref))  # pairwise differs


def test_flogsum_and_null2_odds_vectorised():
    rng = np.random.default_rng(5)
    b = np.concatenate([rng.uniform(-30, 30, 2000), [0.0, -15.7, 15.7, -np.inf, 15.69]]).astype(F32)
    got = flogsum_f32(F32(0.0), b)
    assert [float(x) for x in got] == [flogsum(0.0, float(x)) for x in b]
    w = rng.uniform(0.1, 3.0, (50, 20)).astype(F32)
    rows = null2_odds_rows(w)
    assert all(np.array_equal(rows[t], _ref_null2_odds(w[t])) for t in range(len(w)))


def test_oa_segments_of_synthetic_traces():
    """z1 = first M after B, z2 = last M before the first E after z1; no B or no M after it: none."""
    traces = [
        [ST_B, ST_M, ST_M, ST_E],
        [4, 5, ST_B, ST_D, ST_M, ST_I, ST_M, ST_D, ST_D, ST_E, 8, 9],
        [ST_M, ST_B, ST_D, ST_D],  # no M after B
        [4, 5, 5, 8],  # no B
        [ST_B, ST_M, ST_M, ST_I],  # no E: the trace's end
        [ST_M, ST_B, ST_M, ST_E, ST_M, ST_E],
    ]
    st = np.concatenate([np.array(t, np.int32) for t in traces])
    lengths = np.array([len(t) for t in traces])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    ok, z1, z2 = alignment._oa_segments(st, starts, starts + lengths)
    for t, tr in enumerate(traces):
        tr = np.array(tr)
        b = np.flatnonzero(tr == ST_B)
        m = np.flatnonzero(tr == ST_M)
        m1 = m[m > b[0]] if len(b) else []
        assert ok[t] == (len(m1) > 0), t
        if ok[t]:
            e = np.flatnonzero((tr == ST_E) & (np.arange(len(tr)) > m1[0]))
            zend = e[0] if len(e) else len(tr) - 1
            assert (z1[t] - starts[t], z2[t] - starts[t]) == (m1[0], m[m <= zend][-1]), t


def test_lazy_alignment_behaves_as_a_plain_one():
    lines = AlignmentLines(b"ACDef", b"A+  f", b"ACDEF", b"9*.12", [0, 3], [3, 5], cs=b"HHHEE", has_cs=[True, False])
    a = Alignment.from_lines(lines, 0, 1, 3, 10, 12, 50, 300)
    plain = Alignment(1, 3, 10, 12, "ACD", "A+ ", "ACD", "9*.", 50, 300, cs_line="HHH")
    assert a == plain and repr(a) == repr(plain)
    b = Alignment.from_lines(lines, 1, 4, 5, 13, 14, 50, 300)
    assert (b.model_line, b.pp_line, b.cs_line, b.rf_line) == ("ef", "12", None, None)
    c = copy.deepcopy(Alignment.from_lines(lines, 1, 4, 5, 13, 14, 50, 300))
    assert c == b and not hasattr(c, "_lines")
    b.pp_line = "**"
    assert b.pp_line == "**" and b != c
    built = []

    def build():
        built.append(1)
        return dict(model=b"XY", match=b"  ", target=b"xy", pp=b"00", start=[0], end=[2])

    lazy = AlignmentLines.deferred(build)
    d = Alignment.from_lines(lazy, 0, 1, 2, 1, 2, 2, 2)
    assert not built and d.target_line == "xy" and d.model_line == "XY" and built == [1]


def test_hit_order_equals_sorting_by_key():
    """Ties on the primary key (also 0.0 / -0.0) go to target name, strand, start, index."""
    rng = np.random.default_rng(11)
    hits = []
    for t in range(400):
        nd = int(rng.integers(0, 3))
        doms = []
        for _ in range(nd):
            i, j = (int(v) for v in rng.integers(1, 30, 2))
            doms.append(Domain(1, 2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, Alignment(1, 2, i, j, "", "", "", "", 5, 5)))
        hits.append(Hit(model=int(rng.integers(0, 3)), target=t, model_name="m", model_acc="", model_length=5,
                        target_name=f"t{int(rng.integers(0, 40))}", target_acc="", target_desc="", target_length=5,
                        score=float(rng.choice([1.0, 2.0, -0.0, 0.0])), pre_score=0.0, bias=0.0,
                        lnP=float(rng.choice([-1.0, -0.0, 0.0, -2.5])), evalue=0.0, domains=doms))
    for inc_by_E in (True, False):
        want = sorted(range(len(hits)), key=lambda n: (hits[n].model, _ref_sort_key(hits[n], inc_by_E)))
        assert output.hit_order(hits, inc_by_E=inc_by_E, by_model=True).tolist() == want
        one = [h for h in hits if h.model == 1]
        assert output.sort_hits(one, inc_by_E=inc_by_E) == sorted(one, key=lambda h: _ref_sort_key(h, inc_by_E))


def test_h74_workaround_on_key_columns_equals_per_record():
    """Duplicate alignments within a hit (#h74): the column path drops the same domains as the
    records' path (the lower score of each equal pair, the later one on ties)."""
    rng = np.random.default_rng(74)
    hits, doms_all = [], []
    for t in range(300):
        doms = []
        for _ in range(int(rng.integers(0, 5))):
            i = int(rng.integers(1, 4))
            ali = Alignment(1, 2, i, i + int(rng.integers(0, 2)), "", "", "", "", 5, 5)
            doms.append(Domain(1, 2, float(rng.choice([5.0, 7.0, 9.0])), 0.0, float(rng.uniform(-30, -1)), 0.0, 0.0,
                               0.0, ali))
        hits.append(Hit(model=int(rng.integers(0, 4)), target=t, model_name="m", model_acc="", model_length=5,
                        target_name=f"t{t}", target_acc="", target_desc="", target_length=5, score=30.0,
                        pre_score=30.0, bias=0.0, lnP=-20.0, evalue=0.0, reported=True, included=bool(t % 3),
                        noverlaps=int(rng.integers(0, 2)) * len(doms), domains=doms))
        doms_all += doms
    th = cascade.Thresholds(Z=500)

    class Source:  # the DomainSource interface threshold_hits uses
        def __init__(self, n):
            self.n, self.values = n, {}

        def __len__(self):
            return self.n

        def set_flags(self, **values):
            self.values = {k: np.array(v) for k, v in values.items()}

    nd = np.array([len(h.domains) for h in hits])
    half = int(nd[:150].sum())
    sources = [Source(half), Source(int(nd.sum()) - half)]
    cols = {"model": np.array([h.model for h in hits]), "reported": np.ones(len(hits), dtype=bool),
            "included": np.array([h.included for h in hits]), "nd": nd,
            "noverlaps": np.array([h.noverlaps for h in hits]),
            "dom_lnP": np.array([d.lnP for d in doms_all]), "dom_score": np.array([d.score for d in doms_all]),
            "dom_ali_from": np.array([d.ali_from for d in doms_all]),
            "dom_ali_to": np.array([d.ali_to for d in doms_all]), "sources": sources}
    cascade.threshold_hits(hits, th, 500.0, flagged=True, cols=cols)
    cascade.threshold_hits(hits, th, 500.0, flagged=True)
    got = {k: np.concatenate([s.values[k] for s in sources]) for k in sources[0].values}
    for name in ("c_evalue", "i_evalue", "reported", "included"):
        assert got[name].tolist() == [getattr(d, name) for d in doms_all], name
    assert 0 < sum(not d.reported for d in doms_all) < len(doms_all)
    assert any(not d.reported and h.noverlaps for h in hits for d in h.domains if h.included)


def test_ensemble_results_are_the_dict_they_replace():
    flat, pair, number = np.array([1, 4, 5, 9]), np.array([0, 2, 2, 5]), np.array([1, 0, 1, 2])
    res = [(np.full(k + 1, k, F32), [(k, k + 1)]) for k in range(4)]
    ens = EnsembleResults(flat, pair, number, res)
    assert dict(ens) == dict(zip(zip(pair.tolist(), number.tolist()), res)) and len(ens) == 4
    assert ens[(2, 1)] is res[2] and ens.of_flat(np.array([4, 9])) == [res[1], res[3]] and ens.of_flat([]) == []
    for missing in ([3], [10]):
        with pytest.raises(KeyError):
            ens.of_flat(np.array(missing))
    assert len(EnsembleResults(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), [])) == 0
