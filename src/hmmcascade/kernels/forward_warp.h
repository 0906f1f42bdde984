/* forward_warp.h: the body of the forward_warp<C> kernels (forward.cl includes it once per chunk
 * size, with FW_C nodes per lane and the kernel's name FW_NAME defined).
 *
 * forward_filter's recurrence, one warp (32 work-items) per pair; lane l holds nodes l*C+1 ..
 * l*C+C of the rows M, I, D and their transitions in registers (models of M <= 32*C nodes; the
 * host sends longer ones to forward_filter / forward_wg).  Per row i:
 *
 *   1. the previous row times the pending rescale (only after a row that rescaled);
 *   2. M and I of the lane's nodes, descending (node k0-1 of row i-1 comes from the lane before
 *      by a shuffle made at the end of row i-1);
 *   3. the D chain D(k+1) = M(k) tMD_k + D(k) tDD_k along the whole row: per lane the
 *      composition x -> A + x P of its nodes' steps (P, a product of tDD, is the same on every
 *      row: its scan is done once), a scan over the lanes (5 shuffles) gives D at the lane's
 *      first node, and the lane replays its chain from it;
 *   4. E(i) = sum of M + D over the row (a butterfly sum: every lane gets the same float);
 *   5. N, C, J, B and the sparse rescaling, as forward_filter (forward_specials).
 *
 * The sums run in another order than forward_filter's (the D chain is split at lane boundaries,
 * E is summed pairwise), so the scores agree with forward_filter's, and HMMER's, to float
 * rounding, not bit for bit; tests/test_forward.py holds them to the float64 Forward as it does
 * forward_filter.  Nodes past the model have zero tables (as in forward_filter): their cells
 * stay 0.
 */

#define FW_Q (FW_C / 4)              /* words of 4 nodes per lane */

__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void FW_NAME(
    __global const uchar *dsq,
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const float2 *seq_xf,   /* [n_seq] N/C/J (move, loop) probabilities */
    __global const int   *pair_seq,
    __global const int   *pair_model,
    const int n_pairs,
    const int max_Q,                 /* (unused: forward_filter's signature)      */
    __global const float4 *msc,      /* per model [KP][Q] words of 4 nodes (odds) */
    __global const long  *msc_off,   /* [n_models] start, in words                */
    __global const float4 *tsc,      /* per model [Q][8] words (probabilities)    */
    __global const long  *tsc_off,   /* [n_models] start, in words                */
    __global const int   *model_M,
    __global const float2 *xf_e,     /* [n_models] E move, E loop                 */
    __global float4 *rows,           /* (unused)                                  */
    __global float *out_nats)        /* [n_pairs] Forward score                   */
{
    __local int tmp[32];
    const int lane = (int) get_local_id(0);
    const int p = (int) get_num_groups(0) - 1 - (int) get_group_id(0);   /* largest pairs first */
    if (p >= n_pairs) return;                      /* the whole group */
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float4 *msc_m = msc + msc_off[m];
    __global const float4 *t = tsc + tsc_off[m];
    const int q0 = lane * FW_Q;                    /* the lane's first word */

#define WT_C FW_C
#define WT_WORDS Q
#ifdef FW_TGLOBAL
#define WT_TGLOBAL
#endif
#include "warp_transitions.h"
    /* the lane's product of tDD, and its running products over the scan's steps */
    float P = 1.0f;
#pragma unroll
    for (int j = 0; j < FW_C; j++) P = P * TRV(T_DD, j);
    float Pup[5];
    fw_dd_products(P, lane, tmp, Pup);

    float Mc[FW_C], Ic[FW_C], Dc[FW_C];
#pragma unroll
    for (int j = 0; j < FW_C; j++) Mc[j] = Ic[j] = Dc[j] = 0.0f;
    float pM = 0.0f, pI = 0.0f, pD = 0.0f;         /* row i-1, node k0-1 */

    const float2 nc = seq_xf[s];                   /* .x move, .y loop */
    const float2 xe = xf_e[m];
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f;
    float xB = nc.x;
    float totscale = 0.0f;
    float pscale = 1.0f;                           /* pending rescale of the previous row */
    for (int i = 0; i < L; i++) {
        if (pscale != 1.0f) {                      /* uniform */
#pragma unroll
            for (int j = 0; j < FW_C; j++) { Mc[j] *= pscale; Ic[j] *= pscale; Dc[j] *= pscale; }
            pM *= pscale; pI *= pscale; pD *= pscale;
        }
        __global const float4 *e4 = msc_m + (int) x[i] * Q + q0;
        float e[FW_C];
#pragma unroll
        for (int w = 0; w < FW_Q; w++) {
            const float4 v = q0 + w < Q ? e4[w] : (float4) (0.0f);
            e[4 * w] = v.x; e[4 * w + 1] = v.y; e[4 * w + 2] = v.z; e[4 * w + 3] = v.w;
        }
#define FR_C FW_C
#include "forward_row.h"
#undef FR_C
        const float xE = row_E;
        forward_specials(xE, nc, xe, &xN, &xC, &xJ, &xB, &pscale, &totscale);
        /* row i's last nodes for the next lane's first node at row i+1 */
        const float nm = fw_up(Mc[FW_C - 1], 1, lane, tmp);
        const float ni = fw_up(Ic[FW_C - 1], 1, lane, tmp);
        const float nd = fw_up(Dc[FW_C - 1], 1, lane, tmp);
        pM = lane ? nm : 0.0f;
        pI = lane ? ni : 0.0f;
        pD = lane ? nd : 0.0f;
    }
    if (lane == 0) out_nats[p] = (L > 0) ? ADD_LOG_AS_HMMER(totscale, xC * nc.x) : LOG_AS_HMMER(0.0f * nc.x);
}

#undef FW_Q
#undef TRV
