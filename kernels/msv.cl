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
 * sorted by length so that a warp's work-items finish together; the row
 * M(i-1, .) lives in global scratch, interleaved by sequence.
 *
 * HMMER first tries its SSV shortcut (ssvfilter.c), which returns the same
 * score whenever it returns one; computing the full MSV recurrence therefore
 * gives HMMER's result.
 */
#include "hmmcascade.h"

__kernel void msv_filter(
    __global const uchar *dsq,        /* interleaved residues [i * n_seq + s]      */
    __global const int   *seq_len,    /* [n_seq] residues                          */
    __global const uchar *seq_tjb,    /* [n_seq] tjb_b for the sequence's length   */
    const int n_seq,
    __global const uchar *cost,       /* concatenated [KP * M] biased match costs  */
    __global const long  *emis_off,   /* [n_models] start of each model in cost    */
    __global const int   *model_M,    /* [n_models] nodes                          */
    __global const uchar4 *params,    /* [n_models] tbm_b, tec_b, base_b, bias_b   */
    const int model0,                 /* model of launch row 0                     */
    __global const long  *row_off,    /* [launch models] scratch start / n_seq     */
    __global uchar *row,              /* scratch: M(i-1,k) at [(off + k) * n_seq + s] */
    __global short *out_xj)           /* [(m - model0) * n_seq + s]: J(L) or -1    */
{
    const int s  = get_global_id(0);
    const int mi = get_global_id(1);
    if (s >= n_seq) return;
    const int m = model0 + mi;
    const int M = model_M[m];
    const int L = seq_len[s];
    const uchar4 p = params[m];
    const uchar tec = p.y, base = p.z, bias = p.w;
    const uchar tjbm = (uchar) (seq_tjb[s] + p.x);
    __global const uchar *cost_m = cost + emis_off[m];
    __global uchar *r = row + row_off[mi] * (long) n_seq + s;

    for (int k = 0; k < M; k++) r[(long) k * n_seq] = 0;

    uchar xJ = 0;
    uchar xB = sub_sat(base, tjbm);
    for (int i = 0; i < L; i++) {
        __global const uchar *c = cost_m + (int) dsq[(long) i * n_seq + s] * M;
        uchar xE = 0;
        uchar mpv = 0;                       /* M(i-1, 0): -infinity */
        for (int k = 0; k < M; k++) {
            uchar sv = sub_sat(add_sat(max(mpv, xB), bias), c[k]);
            xE  = max(xE, sv);
            mpv = r[(long) k * n_seq];
            r[(long) k * n_seq] = sv;
        }
        if (add_sat(xE, bias) == 255) { out_xj[(long) mi * n_seq + s] = -1; return; }
        xJ = max(xJ, sub_sat(xE, tec));
        xB = sub_sat(max(base, xJ), tjbm);
    }
    out_xj[(long) mi * n_seq + s] = xJ;
}
