/* null2.cl: the null2 sums of a batch's domain-defined pairs (p7_domaindef's n2sc, the domains'
 * corrections and the target's esl_vec_FSum), from the per-residue null2 scores.
 *
 * The null2 score n2sc[z] of residue z (nats) is, inside a single-domain envelope, logf of that
 * envelope's null2 odds of the residue (a [KP] row per envelope, logf taken on the host as glibc's);
 * inside a multi-domain region, the stochastic clustering's score (copied); zero elsewhere.  The
 * host lays each pair's n2sc out as one row (its first region's start .. last region's end) in one
 * flat float array, and describes the pieces that fill it:
 *
 *   piece p: n2sc[dst[p] .. dst[p] + len[p]) = row[p] >= 0 ? logodds[row[p] * KP + dsq[src[p] + x]]
 *                                                         : values[src[p] + x]        (x = 0 .. len-1)
 *
 * (the rest of the array is zero: the host fills it before).  Pieces do not overlap.
 *
 * null2_fill   a work-group per piece, its work-items striding over the piece's residues.
 * null2_sums   a work-item per sum, in the host's float order (hmmcascade.domaindef.numerics.sequential_fsum
 *   and kahan_fsum_segments, FP_CONTRACT off; nothing here multiplies):
 *   work-item d < nd: a domain's correction, its segment added left to right from its first value
 *     (segments are not empty);
 *   work-item nd + h: a pair's null2 sum, esl_vec_FSum of its row (compensated:
 *     y = x - c; t = s + y; c = (t - s) - y; s = t), then up to tz[h] zeros (the residues after
 *     the row up to L), stopping at the first zero that leaves s and c as they were.
 */
#include "hmmcascade.h"

#include "zero_words.h"

__kernel void null2_fill(
    __global const float *logodds,   /* [rows][KP] logf of single envelopes' null2 odds (nats)   */
    __global const float *values,    /* multi-domain regions' scores, concatenated (nats)        */
    __global const uchar *dsq,       /* the batch's residues (digital codes)                      */
    __global const int   *row,       /* [pieces] logodds row, or -1: copy from values             */
    __global const long  *src,       /* [pieces] first residue in dsq, or first value in values   */
    __global const long  *dst,       /* [pieces] first element in n2sc                            */
    __global const int   *len,       /* [pieces]                                                  */
    const int npieces,
    __global float *n2sc)
{
    const int p = (int) get_group_id(0);
    if (p >= npieces)
        return;
    const int r = row[p], n = len[p];
    const long s = src[p];
    __global float *out = n2sc + dst[p];
    if (r >= 0) {
        __global const float *lo = logodds + (long) r * KP;
        for (int x = (int) get_local_id(0); x < n; x += (int) get_local_size(0))
            out[x] = lo[dsq[s + x]];
    } else {
        for (int x = (int) get_local_id(0); x < n; x += (int) get_local_size(0))
            out[x] = values[s + x];
    }
}

__kernel void null2_sums(
    __global const float *n2sc,
    __global const long  *dom_start, /* [nd] the domains' envelopes in n2sc                       */
    __global const int   *dom_len,
    const int nd,
    __global const long  *row_start, /* [nh] the pairs' rows in n2sc                              */
    __global const int   *row_len,
    __global const long  *row_tz,    /* [nh] zeros after the row (L - the last region's end)      */
    const int nh,
    __global float *corr,            /* [nd] out                                                  */
    __global float *n2sum)           /* [nh] out                                                  */
{
    const int g = (int) get_global_id(0);
    if (g < nd) {
        __global const float *v = n2sc + dom_start[g];
        const int n = dom_len[g];
        float acc = v[0];
        for (int x = 1; x < n; x++)
            acc += v[x];
        corr[g] = acc;
        return;
    }
    const int h = g - nd;
    if (h >= nh)
        return;
    __global const float *v = n2sc + row_start[h];
    const int n = row_len[h];
    float s = 0.0f, c = 0.0f;
    for (int x = 0; x < n; x++) {
        const float y = v[x] - c;
        const float t = s + y;
        c = (t - s) - y;
        s = t;
    }
    for (long z = 0; z < row_tz[h]; z++) {
        const float y = 0.0f - c;
        const float t = s + y;
        const float cn = (t - s) - y;
        if (as_uint(t) == as_uint(s) && as_uint(cn) == as_uint(c))
            break;
        s = t;
        c = cn;
    }
    n2sum[h] = s;
}
