"""src/hmmcascade/kernels/viterbi.cl, ViterbiFilter, and the cascade's per-stage pass counts.

(a) As HMMER's own unit test (vitfilter.c ``utest_viterbi_filter``) checks
``p7_ViterbiFilter`` against ``p7_GViterbi`` on a profile rounded the same
way (``p7_profile_SameAsVF``) and fails at |difference| > 0.001 nats, we check
the kernel against a plain generic Viterbi on the same word tables, in float64
without saturation.

(b) The two kernels, ``viterbi_filter`` (a work-item per pair) and ``viterbi_wg``
(a work-group per pair), give the same word on every pair of real models and
proteins: bit-identical, overflows and the empty target's -32768 included.

(c) The number of (model, target) pairs passing each filter on the default
data equals what HMMER 3.3.2's ``hmmsearch`` prints.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import BEST_HITS, PYHMMER_DATA, concat, sorted_by_length
from hmmcascade import cascade, device_data, filters, profiles, stats
from hmmcascade.press import press
from hmmcascade import io as hio
from hmmcascade.io import SequenceSet
from hmmcascade.instrument import Instrument
from hmmcascade.options import SearchOptions

WORD_NEG_INF = -32768
WORD_MAX = 32767

#: Models of the Viterbi comparison: lengths 13 to 1021, every remainder of M mod 4 (the kernel
#: packs four nodes per word and pads the last): 13, 44, 59, 154, 216, 363, 647, 1021.
VIT_MODELS = ("MraY_sig1", "tRNA_SAD", "MarR", "Peptidase_S49", "NMT1", "Aminotran_1_2", "PFL-like", "ACR_tran")


def word_inf(a: np.ndarray) -> np.ndarray:
    """Words as float64, with HMMER's -infinity word (-32768) as -inf."""
    a = np.asarray(a, dtype=np.float64)
    return np.where(a <= WORD_NEG_INF, -np.inf, a)


def padded_residues(seqs, order: np.ndarray) -> np.ndarray:
    """``[n, L_max]`` residue codes of sequences ``order`` (padding never read)."""
    L = seqs.lengths[order]
    x = np.zeros((len(order), int(L.max())), dtype=np.intp)
    for j, s in enumerate(order):
        x[j, : L[j]] = seqs.residues[seqs.offsets[s] : seqs.offsets[s] + L[j]]
    return x


def generic_viterbi(db, m: int, seqs, move_w: np.ndarray):
    """Generic local multihit Viterbi on model ``m``'s word tables, all sequences at once.

    Float64, no saturation, -32768 words as -inf.  Specials as the filter
    defines them: N = 0 throughout (NN = 0), B(0) = N + tNB; per row i
    E = max_k max(M(i,k), D(i,k)); C = max(C, E + tEC); J = max(J, E + tEJ);
    B = max(J, N) + move (tJB = tNB = move, CC = JJ = 0).  B->M_k costs tBM_k.
    Score words (relative to 0, not base_w): C(L) + tCT.

    The D chain D(k+1) = max(M(k) + tMD_k, D(k) + tDD_k) is evaluated in closed
    form, S_k + max_{l<=k}(M(l) + tMD_l - S_l) with S the running sum of tDD,
    exact in float64 because every term is an integer.

    Returns (score words, max over rows of max_k M(i,k)) per sequence; the
    second is what the kernel compares with 32767 to detect overflow.
    """
    e = word_inf(db.emission(db.vit_msc_i16, m))
    t = word_inf(db.transitions(db.vit_tsc_i16, m))
    M = e.shape[1]
    tBM, tMM, tIM, tDM, tMD, tMI, tII, tDD = (t[:, j] for j in range(8))
    S = np.cumsum(tDD[: M - 1])  # tDD of nodes 1..M-1: finite
    assert np.all(np.isfinite(S))
    e_move, e_loop = (float(v) for v in db.vit_xw_e_i16[m])

    order = np.argsort(-seqs.lengths, kind="stable")  # longest first: active sequences are a prefix
    L = seqs.lengths[order].astype(int)
    x = padded_residues(seqs, order)
    move = move_w[order].astype(np.float64)
    n = len(order)
    Mp = np.full((n, M), -np.inf)
    Ip, Dp = Mp.copy(), Mp.copy()
    B = move.copy()
    C = np.full(n, -np.inf)
    J, top = C.copy(), C.copy()
    score, score_top = np.empty(n), np.empty(n)
    col0 = np.full((n, 1), -np.inf)

    def prev(A, a):  # row cells shifted to node k-1 (M_0, I_0, D_0 are -inf)
        return np.concatenate([col0[:a], A[:, :-1]], axis=1)

    for i in range(L[0]):
        a = int(np.count_nonzero(L > i))
        Mp, Ip, Dp, B, C, J, top, mv = Mp[:a], Ip[:a], Dp[:a], B[:a], C[:a], J[:a], top[:a], move[:a]
        Mc = np.maximum.reduce([B[:, None] + tBM, prev(Mp, a) + tMM, prev(Ip, a) + tIM, prev(Dp, a) + tDM])
        Mc = Mc + e[x[:a, i]]
        Ic = np.maximum(Mp + tMI, Ip + tII)
        Dc = np.concatenate([col0[:a], S + np.maximum.accumulate(Mc[:, : M - 1] + tMD[: M - 1] - S, axis=1)], axis=1)
        EM = Mc.max(axis=1)
        E = np.maximum(EM, Dc.max(axis=1))
        top = np.maximum(top, EM)
        C = np.maximum(C, E + e_move)
        J = np.maximum(J, E + e_loop)
        B = np.maximum(J, 0.0) + mv
        Mp, Ip, Dp = Mc, Ic, Dc
        done = np.flatnonzero(L[:a] == i + 1)
        score[done] = C[done] + mv[done]
        score_top[done] = top[done]
    out_score, out_top = np.empty(n), np.empty(n)
    out_score[order], out_top[order] = score, score_top
    return out_score, out_top


def generic_viterbi_nats(db, m, seqs, move_w):
    words, top = generic_viterbi(db, m, seqs, move_w)
    return words / db.scale_w - 3.0, top  # the filter's score: its -3 nat NN/CC/JJ approximation


@pytest.fixture(scope="module")
def vit_sample(msv_sample, default_hmms):
    """8 models (M 13..1021) x 41 sequences (lengths 1..4,560, sorted), pressed.

    Sequences: each model's best HMMER hit (most overflow the word range) and
    33 evenly spaced in length rank over the MSV sample, whose shortest is a
    1-residue fragment and longest the 4,560-residue protein.
    """
    hmms = [h for h in default_hmms if h.name in VIT_MODELS]
    assert len(hmms) == len(VIT_MODELS)
    seqs = msv_sample.seqs
    index = {n: i for i, n in enumerate(seqs.names)}
    best = [index[BEST_HITS[h.name]] for h in hmms]
    spread = np.linspace(0, len(seqs) - 1, 33).round().astype(int)
    chosen = np.unique(np.concatenate([best, spread]))  # seqs is length-sorted, so this stays sorted
    assert len(chosen) == 41  # 8 best hits + 33 spread, no overlap
    return press(hmms), seqs.subset(chosen)


@pytest.mark.parametrize("path", ["serial", "wg", "warp"])
def test_viterbi_filter_matches_generic_viterbi(vit_sample, device, path):
    """Kernel score = generic Viterbi score within 0.001 nats (HMMER's utest bound), overflow exactly where due.

    0.001 nats is less than one word (1/500 bit = 0.0014 nats), so this asks
    for the same word; the remaining slack is the float conversion.  A kernel
    overflow (+inf) is allowed only where the reference's best match cell
    reaches the 16-bit limit (max_i,k M(i,k) + base_w >= 32767), and required there.

    Pairs go in shuffled order through a 64 KiB scratch budget, so the pair
    sorting, the chunking into launches (several for viterbi_filter, one per
    size class for viterbi_wg) and the scatter back are exercised too.
    """
    db, seqs = vit_sample
    lp = profiles.length_params(seqs.lengths, db)
    batch = device_data.DeviceBatch.upload(device, seqs, lp)
    vf = filters.ViterbiFilter(device, device_data.DeviceModels(device, db), 64 << 10, path=path)
    rng = np.random.default_rng(7)
    perm = rng.permutation(len(db) * len(seqs))
    pair_model = np.repeat(np.arange(len(db)), len(seqs))[perm]
    pair_seq = np.tile(np.arange(len(seqs)), len(db))[perm]
    by_length = pair_model[np.argsort(db.M[pair_model], kind="stable")]
    n_launch = len(list(vf._chunks(by_length)))
    if path == "serial":
        assert n_launch > 10  # the budget holds ~10 pairs of the longest model
    elif path == "wg":
        assert n_launch == 2  # size classes of <= 128 words and <= 256 (M 647 and 1021: 162, 256 words)
    else:
        assert n_launch == 5  # viterbi_warp4 (M 13, 44, 59), 8 (154, 216), 12 (363), 24 (647), 32 (1021)
    xc, _ = vf(batch, pair_seq, pair_model)
    got = stats.viterbi_nats(xc, lp.xw_move_i16[pair_seq], db.base_w, db.scale_w)

    n_overflow = n_finite = 0
    for m in range(len(db)):
        ref, top = generic_viterbi_nats(db, m, seqs, lp.xw_move_i16)
        sel = pair_model == m
        k = np.empty(len(seqs), dtype=np.float32)
        k[pair_seq[sel]] = got[sel]
        ref_overflow = top + db.base_w >= WORD_MAX
        np.testing.assert_array_equal(np.isposinf(k), ref_overflow, err_msg=db.names[m])
        ok = ~ref_overflow
        assert np.all(np.isfinite(ref[ok])), db.names[m]
        diff = np.abs(k[ok].astype(np.float64) - ref[ok])
        worst = int(np.argmax(diff))
        assert diff.max() <= 1e-3, (db.names[m], seqs.names[np.flatnonzero(ok)[worst]], k[ok][worst], ref[ok][worst])
        n_overflow += int(ref_overflow.sum())
        n_finite += int(ok.sum())
    assert n_overflow >= 5 and n_finite >= 200  # both exits of the filter were compared


#: pyhmmer's protein test models (LuxC 400 nodes, KR 262, Thioesterase 243, PF02826 178); KR and
#: Thioesterase are domains of the polyketide synthases in pyhmmer's PKSI.faa, LuxC of LuxC.faa.
PYHMMER_MODELS = ("LuxC", "KR", "Thioesterase", "PF02826")


@pytest.fixture(scope="module")
def wg_sample(msv_sample):
    """29 models (M 13..1021) x 76 sequences (lengths 0..4,613), pressed; 2,204 pairs.

    Models: the MSV sample's 25 (every other default model and the longest, ACR_tran,
    1021 nodes = 256 words) and pyhmmer's four protein test models.

    Sequences, sorted by length: of the MSV sample, the best HMMER hit of each of its
    models that has one (22; they overflow the word range or come close, with long
    D->D runs), its 9 fragments (1..9 residues), its 3 longest (3,485 to 4,560) and 30
    spread over its length ranks; all 10 proteins of pyhmmer's PKSI.faa (349 to 4,613)
    and every third of its LuxC.faa (4); and two edge cases: an empty sequence (C(0)
    stays -32768, the "no path" word) and a lone nonresidue '*'.
    """
    seqs = msv_sample.seqs
    best = {BEST_HITS[h.name] for h in msv_sample.hmms if h.name in BEST_HITS}
    keep = [i for i, name in enumerate(seqs.names) if name in best or "/1-" in name]
    keep += list(np.argsort(seqs.lengths, kind="stable")[-3:])
    keep += list(np.linspace(0, len(seqs) - 1, 30).round().astype(int))
    pks = hio.read_sequences(PYHMMER_DATA / "seqs" / "PKSI.faa")
    lux = hio.read_sequences(PYHMMER_DATA / "seqs" / "LuxC.faa")
    edge = SequenceSet(names=["empty", "stop"], descriptions=["", ""], lengths=np.array([0, 1], dtype=np.int32),
                       offsets=np.zeros(2, dtype=np.int64), residues=np.array([27], dtype=np.uint8))
    chosen = sorted_by_length(concat([seqs.subset(np.unique(keep)), pks, lux.subset(np.arange(0, 12, 3)), edge]))
    hmms = msv_sample.hmms + [h for n in PYHMMER_MODELS for h in hio.read_hmms(PYHMMER_DATA / "hmms" / "txt" / f"{n}.hmm")]
    assert len(hmms) == 29 and len(chosen) == 76
    return press(hmms), chosen


@pytest.fixture(scope="module")
def wg_run(wg_sample, device):
    """Every pair of the sample, shuffled, through ViterbiFilter with the option viterbi = serial, then wg.

    Returns (db, batch, models, pair_seq, pair_model, {path: words}, {path: launch log})."""
    db, seqs = wg_sample
    with np.errstate(divide="ignore", invalid="ignore"):  # the empty target's length model is log(0); never read
        lp = profiles.length_params(seqs.lengths, db)
    batch = device_data.DeviceBatch.upload(device, seqs, lp)
    models = device_data.DeviceModels(device, db)
    perm = np.random.default_rng(11).permutation(len(db) * len(seqs))
    pair_model = np.repeat(np.arange(len(db)), len(seqs))[perm].astype(np.int32)
    pair_seq = np.tile(np.arange(len(seqs)), len(db))[perm].astype(np.int32)
    words, logs = {}, {}
    for path in ("serial", "wg", "warp"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(device, "instrument", Instrument(launches=True))
            vf = filters.ViterbiFilter(device, models, 1 << 20, options=SearchOptions(viterbi=path))
            assert vf.path == path
            words[path], _ = vf(batch, pair_seq, pair_model)
            logs[path] = device.instrument.launches
    return db, batch, models, pair_seq, pair_model, words, logs


def test_group_kernel_equals_serial_kernel(wg_run):
    """viterbi=wg (viterbi_wg on every pair) and =warp (viterbi_warp<C> on the models of
    up to 1,024 nodes, viterbi_wg on longer ones) give =serial's (viterbi_filter's) words, exactly.

    Both exits are compared: overflow (32767) and C(L), the empty target's -32768
    among them; the wg pairs went in two launches (size classes <= 128 and <= 256
    words), each its largest pairs first, and came back in input order."""
    db, _, _, pair_seq, pair_model, words, logs = wg_run
    np.testing.assert_array_equal(words["wg"], words["serial"])
    np.testing.assert_array_equal(words["warp"], words["serial"])
    w = words["serial"]
    assert (w == 32767).sum() >= 20 and (w == -32768).sum() == len(db)
    assert ((w > -32768) & (w < 32767)).sum() >= 2000
    assert [r[0] for r in logs["wg"]] == ["ViterbiFilter/wg"] * 2
    assert {r[0] for r in logs["serial"]} == {"ViterbiFilter"}
    assert sum(r[2] for r in logs["wg"]) == len(pair_seq)
    # warp: every chunk size (models of M 13..1021: up to 128, 256, 384, 512, 768, 1024 nodes)
    assert [r[0] for r in logs["warp"]] == [f"ViterbiFilter/warp{c}" for c in filters.VIT_WARP_C]
    assert sum(r[2] for r in logs["warp"]) == len(pair_seq)


def test_group_kernel_one_launch(wg_run, device):
    """One launch of each kernel on 600 of the pairs in shuffled order (not sorted by size: local
    rows sized for the longest model, groups of every size in one launch) gives the same words."""
    db, batch, models, pair_seq, pair_model, words, _ = wg_run
    vf = filters.ViterbiFilter(device, models, 1 << 30, path="wg")
    sel = np.random.default_rng(3).choice(len(pair_seq), 600, replace=False)
    assert vf._is_wg(pair_model[sel]) and int(db.M[pair_model[sel]].max()) == 1021
    got, _ = vf._launch(batch, pair_seq[sel], pair_model[sel], np.int16)
    vf.wg_qmax = 0  # everything to viterbi_filter
    serial, _ = vf._launch(batch, pair_seq[sel], pair_model[sel], np.int16)
    np.testing.assert_array_equal(got, words["serial"][sel])
    np.testing.assert_array_equal(serial, words["serial"][sel])


def test_models_over_the_bound_take_the_serial_kernel(wg_run, device):
    """With viterbi_wg's bound lowered to 64 words (M <= 256), the longer models go to viterbi_filter
    in the same call; the words stay the same."""
    db, batch, models, pair_seq, pair_model, words, _ = wg_run
    vf = filters.ViterbiFilter(device, models, 1 << 20, path="wg")
    vf.wg_qmax = 64
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(device, "instrument", Instrument(launches=True))
        got, _ = vf(batch, pair_seq, pair_model)
        log = device.instrument.launches
    np.testing.assert_array_equal(got, words["serial"])
    n_wg = int((models.node_words[pair_model] <= 64).sum())
    assert sum(r[2] for r in log if r[0] == "ViterbiFilter/wg") == n_wg
    assert 0 < n_wg < len(pair_seq)


def test_viterbi_path_choice(wg_run, device):
    """The options' ``viterbi`` picks the kernel (default: warp on GPUs, serial on CPUs); others are refused."""
    models = wg_run[2]
    assert filters.ViterbiFilter(device, models, 1 << 20).path == ("warp" if device.is_gpu else "serial")
    vf = filters.ViterbiFilter(device, models, 1 << 20, options=SearchOptions(viterbi="WG"))
    assert vf.path == "wg" and vf.wg_qmax == min(filters.VIT_WG_QMAX, (device.local_mem_bytes - 1024) // 48)
    assert vf.warp_qmax == 0
    assert filters.ViterbiFilter(device, models, 1 << 20, path="serial").wg_qmax == 0
    vf = filters.ViterbiFilter(device, models, 1 << 20, path="warp")
    assert vf.warp_qmax == 8 * max(filters.VIT_WARP_C) and vf.wg_qmax == min(filters.VIT_WG_QMAX, (device.local_mem_bytes - 1024) // 48)
    with pytest.raises(ValueError, match="option viterbi"):
        filters.ViterbiFilter(device, models, 1 << 20, options=SearchOptions(viterbi="fast"))
    with pytest.raises(ValueError, match="option viterbi"):
        filters.ViterbiFilter(device, models, 1 << 20, path="fast")


#: Pairs passing each filter, per model, printed by HMMER 3.3.2 (Debian's /usr/bin/hmmsearch):
#:     zcat resources/pfam35_default.hmm.gz > models.hmm; zcat resources/proteins_default.faa.gz > seqs.faa
#:     hmmsearch --cpu 2 -Z 2000 -o out.txt models.hmm seqs.faa
#: "Passed MSV filter", "Passed bias filter", "Passed Vit filter", "Passed Fwd filter" of each query.
HMMER_PASSED = {
    "3Beta_HSD": (66, 45, 9, 7), "AAA_18": (198, 169, 88, 42), "ABC2_membrane_7": (95, 60, 3, 0),
    "Abhydrolase_1": (81, 73, 19, 16), "ACAS_N": (51, 37, 4, 1), "ACR_tran": (146, 73, 9, 2),
    "ADH_N": (50, 42, 8, 4), "Aminotran_1_2": (81, 70, 20, 12), "ArAE_1": (209, 47, 4, 3),
    "ArsA_ATPase": (121, 67, 8, 2), "Caps_assemb_Wzi": (58, 34, 2, 1), "Cation_ATPase_C": (275, 59, 10, 2),
    "Cation_efflux": (224, 45, 7, 1), "COesterase": (82, 49, 7, 1), "CRS1_YhbY": (63, 47, 8, 3),
    "DUF3817": (85, 30, 1, 0), "DUF4131": (290, 241, 68, 42), "DUF5976": (82, 51, 8, 1),
    "DUF6007": (137, 39, 3, 1), "DUF6317": (71, 55, 7, 1), "DUF6367": (90, 66, 2, 0),
    "EAL": (110, 90, 13, 6), "FeoB_Cyto": (170, 93, 14, 1), "Fer4_14": (101, 80, 14, 7),
    "FliD_C": (137, 55, 8, 0), "GreA_GreB": (71, 58, 9, 2), "GreA_GreB_N": (155, 78, 11, 3),
    "HD_assoc": (79, 61, 1, 0), "HSP70": (141, 56, 6, 2), "MarR": (157, 152, 71, 33),
    "Molybdopterin": (83, 63, 7, 2), "MraY_sig1": (56, 44, 4, 1), "MycE_N": (69, 62, 2, 0),
    "Ndc1_Nup": (168, 103, 17, 3), "NMT1": (92, 58, 11, 7), "Peptidase_S49": (103, 74, 11, 2),
    "PFL-like": (79, 44, 5, 1), "Phosphorylase": (95, 44, 2, 1), "SBBP": (66, 45, 8, 0),
    "TonB_dep_Rec": (77, 30, 3, 1), "TPR_1": (73, 63, 12, 6), "TRAM_LAG1_CLN8": (175, 35, 1, 0),
    "Transgly_assoc": (190, 44, 8, 3), "tRNA-synt_1": (105, 51, 6, 3), "tRNA-synt_2c": (111, 54, 6, 2),
    "tRNA_SAD": (43, 38, 4, 3), "YfhO": (290, 94, 12, 2), "Zip": (206, 99, 25, 7),
}


def test_stage_totals_equal_hmmer(default_search):
    """All 48 models x 2,000 proteins in one search: totals of HMMER 3.3.2's per-query counts.

    Exact: each stage's decision is a P-value threshold on a score that
    reproduces HMMER's float, so a single pair decided differently shows up.
    """
    st = default_search.stats
    expected = np.sum(list(HMMER_PASSED.values()), axis=0)
    assert tuple(expected) == (5757, 3167, 586, 240)
    assert (st.past_msv, st.past_bias, st.past_vit, st.past_fwd) == tuple(expected)
    assert st.targets == 2000 and st.models == 48
    assert st.residues == 647_381  # HMMER: "Target sequences: 2000 (647381 residues searched)"


def test_stage_counts_per_model_equal_hmmer(default_hmms, default_seqs, device):
    """Each model searched alone: its four pass counts equal HMMER 3.3.2's for that query."""
    assert sorted(HMMER_PASSED) == sorted(h.name for h in default_hmms)
    got = {}
    for hmm in default_hmms:
        st = cascade.search(press([hmm]), default_seqs, device, cascade.Thresholds(Z=2000)).stats
        got[hmm.name] = (st.past_msv, st.past_bias, st.past_vit, st.past_fwd)
    wrong = {name: (got[name], want) for name, want in HMMER_PASSED.items() if got[name] != want}
    assert not wrong, f"(ours, HMMER) per model: {wrong}"
