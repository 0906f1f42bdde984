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
 * Work: one work-item per pair (filter survivors); rows M, I, D in global
 * scratch, interleaved by pair: row cell k of pair p at [k * n_pairs + p].
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
    const int max_M,                  /* rows hold max_M cells per pair           */
    __global const short *msc,        /* concatenated [KP * M] match scores       */
    __global const long  *emis_off,
    __global const short *tsc,        /* concatenated [M * 8] transitions         */
    __global const long  *trans_off,
    __global const int   *model_M,
    __global const short2 *xw_e,      /* [n_models] E move, E loop                */
    __global const short *ddbound,    /* [n_models]                               */
    const short base_w,
    __global short *rows,             /* scratch: 3 * max_M * n_pairs words       */
    __global short *out_xc)           /* [n_pairs] C(L), -32768, or 32767 overflow */
{
    const int p = get_global_id(0);
    if (p >= n_pairs) return;
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int M = model_M[m];
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const short *msc_m = msc + emis_off[m];
    __global const short *t = tsc + trans_off[m];
    const long stride = n_pairs;
    __global short *mr = rows + p;
    __global short *ir = mr + (long) max_M * stride;
    __global short *dr = ir + (long) max_M * stride;

    const int move = seq_xw_move[s];
    const short2 xe = xw_e[m];
    const int dd_bound = ddbound[m];

    for (int k = 0; k < M; k++) mr[k * stride] = ir[k * stride] = dr[k * stride] = WORD_NEG_INF;

    const short xN = base_w;                       /* N loop is 0: N stays base_w */
    short xB = (short) (xN + move);
    short xJ = WORD_NEG_INF, xC = WORD_NEG_INF;
    for (int i = 0; i < L; i++) {
        __global const short *e = msc_m + (int) x[i] * M;
        short mpv = WORD_NEG_INF, ipv = WORD_NEG_INF, dpv = WORD_NEG_INF;
        short dcv = WORD_NEG_INF;                  /* D(i,k), M->D part */
        short xE = WORD_NEG_INF, dmax = WORD_NEG_INF;
        for (int k = 0; k < M; k++) {
            __global const short *tk = t + k * N_TRANS;
            short sv = add_sat(xB, tk[T_BM]);
            sv = max(sv, add_sat(mpv, tk[T_MM]));
            sv = max(sv, add_sat(ipv, tk[T_IM]));
            sv = max(sv, add_sat(dpv, tk[T_DM]));
            sv = add_sat(sv, e[k]);
            xE = max(xE, sv);
            mpv = mr[k * stride];
            dpv = dr[k * stride];
            ipv = ir[k * stride];
            mr[k * stride] = sv;
            dr[k * stride] = dcv;
            dcv = add_sat(sv, tk[T_MD]);
            dmax = max(dmax, dcv);
            ir[k * stride] = max(add_sat(mpv, tk[T_MI]), add_sat(ipv, tk[T_II]));
        }
        if (xE >= 32767) { out_xc[p] = 32767; return; }
        xC = (short) max((int) xC, (int) xE + xe.x);
        xJ = (short) max((int) xJ, (int) xE + xe.y);
        xB = (short) max((int) xJ + move, (int) xN + move);
        if ((int) dmax + dd_bound > (int) xB) {     /* lazy F: add the D->D paths */
            short dv = dr[0];
            for (int k = 0; k + 1 < M; k++) {
                short up = add_sat(dv, t[k * N_TRANS + T_DD]);
                dv = max(dr[(k + 1) * stride], up);
                dr[(k + 1) * stride] = dv;
            }
        }
    }
    out_xc[p] = xC;
}
