/* msv.cl: HMMER's MSV filter (p7_MSVFilter), 8-bit saturated, bit-exact.
 *
 * What it computes: for each (sequence s, model m) the multihit local
 * ungapped ("multiple segment Viterbi") score, in HMMER's offset unsigned
 * byte arithmetic: 1/3-bit units, 0 = -infinity, base_b (190) = 0.
 *
 * Recurrence, per residue x_i, over nodes k = 1..M (all saturating uchar):
 *
 *   M(i,k) = max(M(i-1,k-1), B(i-1)) + bias_b - cost[x_i][k]
 *   E(i)   = max_k M(i,k)
 *   J(i)   = max(J(i-1), E(i) - tec_b)          (J doubles as C)
 *   B(i)   = max(base_b, J(i)) - (tjb_b + tbm_b)
 *
 * Overflow: if E(i) + bias_b saturates at 255 the score is too high for
 * bytes; HMMER then returns +infinity ("passes the filter"), as we do by
 * writing -1.  Otherwise the kernel writes J(L), and the host turns it into
 * nats exactly as HMMER does: ((J - tjb_b) - base_b) / scale_b - 3.
 *
 * tjb_b depends on the target length (p7_oprofile_ReconfigMSVLength): it is
 * read per sequence.
 *
 * Work: one work-item per (sequence, model); global size (n_seq padded,
 * n_models of this launch).  Sequences are interleaved (see hmmcascade.h),
 * sorted by length so that a warp's work-items finish together.  Four
 * nodes travel together as one uchar4 word: the cost table is laid out
 * [x][q] with q = (k-1)/4 (padded with cost 255, i.e. -infinity), and the
 * row M(i-1, .) lives in global scratch as words interleaved by sequence,
 * so one warp reads 128 contiguous bytes per word.  The diagonal move
 * M(i-1,k-1) -> M(i,k) shifts the previous row's word by one node, taking
 * the last node of the word before.
 *
 * HMMER first tries its SSV shortcut (ssvfilter.c), which returns the same
 * score whenever it returns one; computing the full MSV recurrence therefore
 * gives HMMER's result.
 */
#include "hmmcascade.h"

__kernel void msv_filter(
    __global const uchar *dsq,        /* interleaved residues [i * n_seq + s]             */
    __global const int   *seq_len,    /* [n_seq] residues                                 */
    __global const uchar *seq_tjb,    /* [n_seq] tjb_b for the sequence's length          */
    const int n_seq,
    __global const uchar4 *cost,      /* per model [KP][Q] words of 4 nodes (255-padded)  */
    __global const long  *cost_off,   /* [n_models] start of each model, in words         */
    __global const int   *model_M,    /* [n_models] nodes                                 */
    __global const uchar4 *params,    /* [n_models] tbm_b, tec_b, base_b, bias_b          */
    const int model0,                 /* model of launch row 0                            */
    __global const long  *row_off,    /* [launch models] scratch start / n_seq, in words  */
    __global uchar4 *row,             /* scratch: M(i-1, 4q+1..4q+4) at [(off + q) * n_seq + s] */
    __global short *out_xj)           /* [(m - model0) * n_seq + s]: J(L) or -1           */
{
    const int s  = get_global_id(0);
    const int mi = get_global_id(1);
    if (s >= n_seq) return;
    const int m = model0 + mi;
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    const uchar4 p = params[m];
    const uchar tec = p.y, base = p.z;
    const uchar4 bias = (uchar4) (p.w);
    const uchar tjbm = (uchar) (seq_tjb[s] + p.x);
    __global const uchar4 *cost_m = cost + cost_off[m];
    __global uchar4 *r = row + row_off[mi] * (long) n_seq + s;

    for (int q = 0; q < Q; q++) r[(long) q * n_seq] = (uchar4) (0);

    uchar xJ = 0;
    uchar xB = sub_sat(base, tjbm);
    for (int i = 0; i < L; i++) {
        __global const uchar4 *c = cost_m + (int) dsq[(long) i * n_seq + s] * Q;
        const uchar4 xBv = (uchar4) (xB);
        uchar4 xEv = (uchar4) (0);
        uchar carry = 0;                     /* M(i-1, 4q): -infinity before node 1 */
        for (int q = 0; q < Q; q++) {
            const uchar4 old = r[(long) q * n_seq];
            const uchar4 mpv = (uchar4) (carry, old.x, old.y, old.z);
            carry = old.w;
            const uchar4 sv = sub_sat(add_sat(max(mpv, xBv), bias), c[q]);
            xEv = max(xEv, sv);
            r[(long) q * n_seq] = sv;
        }
        const uchar xE = max(max(xEv.x, xEv.y), max(xEv.z, xEv.w));
        if (add_sat(xE, p.w) == 255) { out_xj[(long) mi * n_seq + s] = -1; return; }
        xJ = max(xJ, sub_sat(xE, tec));
        xB = sub_sat(max(base, xJ), tjbm);
    }
    out_xj[(long) mi * n_seq + s] = xJ;
}
