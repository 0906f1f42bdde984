/* viterbi.cl: HMMER's Viterbi filter (p7_ViterbiFilter), 16-bit, word-exact.
 *
 * What it computes: for each (sequence, model) pair, the optimal local
 * multihit alignment score in HMMER's signed 16-bit arithmetic: 1/500-bit
 * units, -32768 = -infinity, base_w (12000) = 0, all additions saturating.
 *
 * Recurrence, residue x_i, nodes k = 1..M (t* are HMMER's word scores):
 *
 *   M(i,k) = max(B(i-1) + tBM_k, M(i-1,k-1) + tMM_k, I(i-1,k-1) + tIM_k,
 *                D(i-1,k-1) + tDM_k) + e(x_i, k)
 *   I(i,k) = max(M(i-1,k) + tMI_k, I(i-1,k) + tII_k)      (insert emissions 0)
 *   D(i,k+1) = max(M(i,k) + tMD_k, D(i,k) + tDD_k)
 *   E(i) = max_k M(i,k)
 *   N = base_w;  C(i) = max(C(i-1), E(i) + tEC);  J(i) = max(J(i-1), E(i) + tEJ)
 *   B(i) = max(J(i) + tJB, N + tNB)                       (NN = CC = JJ = 0)
 *
 * HMMER's "lazy F": D->D paths of row i are added only if
 * max_k D(i,k) + ddbound_w > B(i); otherwise D keeps the M->D paths alone.
 * We do the same (a second pass over the row when the test says so), so
 * every word equals HMMER's.  Overflow (E(i) >= 32767) writes 32767; the
 * host turns that into +infinity (passes), as HMMER does.  Otherwise the
 * kernel writes C(L); the host converts: (C + tCT - base_w) / scale_w - 3.
 *
 * Work: one work-item per pair (filter survivors).  Four nodes travel as one
 * short4 word (tables padded with -32768 to a multiple of 4 nodes): match
 * scores [x][q], transitions [q][t] (transition t of nodes 4q+1..4q+4).
 * Rows M, I, D live in global scratch as words interleaved by pair (word q
 * of pair p at [q * n_pairs + p]).  Within a word, M and I are computed in
 * parallel; the M->D moves shift by one node; the D->D pass is sequential.
 */
#include "hmmcascade.h"

__kernel void viterbi_filter(
    __global const uchar *dsq,        /* packed residues                          */
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const short *seq_xw_move,/* [n_seq] N/C/J move word, per length     */
    __global const int   *pair_seq,
    __global const int   *pair_model,
    const int n_pairs,
    const int max_Q,                  /* rows hold max_Q words per pair           */
    __global const short4 *msc,       /* per model [KP][Q] words of 4 nodes       */
    __global const long  *msc_off,    /* [n_models] start, in words               */
    __global const short4 *tsc,       /* per model [Q][8] words: transition t of 4 nodes */
    __global const long  *tsc_off,    /* [n_models] start, in words               */
    __global const int   *model_M,
    __global const short2 *xw_e,      /* [n_models] E move, E loop                */
    __global const short *ddbound,    /* [n_models]                               */
    const short base_w,
    __global short4 *rows,            /* scratch: 3 * max_Q * n_pairs words       */
    __global short *out_xc)           /* [n_pairs] C(L), -32768, or 32767 overflow */
{
    const int p = get_global_id(0);
    if (p >= n_pairs) return;
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const short4 *msc_m = msc + msc_off[m];
    __global const short4 *t = tsc + tsc_off[m];
    const long stride = n_pairs;
    __global short4 *mr = rows + p;
    __global short4 *ir = mr + (long) max_Q * stride;
    __global short4 *dr = ir + (long) max_Q * stride;
    const short4 neg = (short4) (WORD_NEG_INF);

    const int move = seq_xw_move[s];
    const short2 xe = xw_e[m];
    const int dd_bound = ddbound[m];

    for (int q = 0; q < Q; q++) mr[q * stride] = ir[q * stride] = dr[q * stride] = neg;

    const short xN = base_w;                       /* N loop is 0: N stays base_w */
    short xB = (short) (xN + move);
    short xJ = WORD_NEG_INF, xC = WORD_NEG_INF;
    for (int i = 0; i < L; i++) {
        __global const short4 *e = msc_m + (int) x[i] * Q;
        const short4 xBv = (short4) (xB);
        short cm = WORD_NEG_INF, ci = WORD_NEG_INF, cd = WORD_NEG_INF;  /* row i-1 at node 4q      */
        short dcarry = WORD_NEG_INF;                                    /* M->D into node 4q+1     */
        short4 xEv = neg, dmaxv = neg;
        for (int q = 0; q < Q; q++) {
            __global const short4 *tq = t + q * N_TRANS;
            const short4 om = mr[q * stride], oi = ir[q * stride], od = dr[q * stride];
            const short4 mpv = (short4) (cm, om.x, om.y, om.z);
            const short4 ipv = (short4) (ci, oi.x, oi.y, oi.z);
            const short4 dpv = (short4) (cd, od.x, od.y, od.z);
            cm = om.w; ci = oi.w; cd = od.w;
            short4 sv = max(max(add_sat(xBv, tq[T_BM]), add_sat(mpv, tq[T_MM])),
                            max(add_sat(ipv, tq[T_IM]), add_sat(dpv, tq[T_DM])));
            sv = add_sat(sv, e[q]);
            xEv = max(xEv, sv);
            const short4 md = add_sat(sv, tq[T_MD]);          /* M->D into nodes 4q+2 .. 4q+5 */
            const short4 dv = (short4) (dcarry, md.x, md.y, md.z);
            dcarry = md.w;
            dmaxv = max(dmaxv, md);
            mr[q * stride] = sv;
            dr[q * stride] = dv;
            ir[q * stride] = max(add_sat(om, tq[T_MI]), add_sat(oi, tq[T_II]));
        }
        const short xE = max(max(xEv.x, xEv.y), max(xEv.z, xEv.w));
        const short dmax = max(max(dmaxv.x, dmaxv.y), max(dmaxv.z, dmaxv.w));
        if (xE >= 32767) { out_xc[p] = 32767; return; }
        xC = (short) max((int) xC, (int) xE + xe.x);
        xJ = (short) max((int) xJ, (int) xE + xe.y);
        xB = (short) max((int) xJ + move, (int) xN + move);
        if ((int) dmax + dd_bound > (int) xB) {     /* lazy F: add the D->D paths */
            short dv = WORD_NEG_INF, tdd = WORD_NEG_INF;
            for (int q = 0; q < Q; q++) {
                short4 w = dr[q * stride];
                const short4 dd = t[q * N_TRANS + T_DD];
                w.x = max(w.x, add_sat(dv, tdd));
                w.y = max(w.y, add_sat(w.x, dd.x));
                w.z = max(w.z, add_sat(w.y, dd.y));
                w.w = max(w.w, add_sat(w.z, dd.z));
                dv = w.w;
                tdd = dd.w;
                dr[q * stride] = w;
            }
        }
    }
    out_xc[p] = xC;
}
