/* forward.cl: HMMER's Forward filter (p7_ForwardParser), float32.
 *
 * What it computes: for each (sequence, model) pair, the Forward score
 * (nats): the log of the summed probability of all local multihit
 * alignments, in probability space with HMMER's sparse rescaling.
 *
 * Recurrence, residue x_i, nodes k = 1..M (odds ratios e, probabilities t):
 *
 *   M(i,k) = (B(i-1) tBM_k + M(i-1,k-1) tMM_k + I(i-1,k-1) tIM_k
 *             + D(i-1,k-1) tDM_k) e(x_i,k)
 *   I(i,k) = M(i-1,k) tMI_k + I(i-1,k) tII_k
 *   D(i,k+1) = M(i,k) tMD_k + D(i,k) tDD_k
 *   E(i) = sum_k M(i,k) + D(i,k)
 *   N(i) = N(i-1) tNN;  C(i) = C(i-1) tCC + E(i) tEC;  J(i) = J(i-1) tJJ + E(i) tEJ
 *   B(i) = J(i) tJB + N(i) tNB
 *
 * Rescaling: when E(i) > 1e4, row i and N, C, J, B are divided by E(i) and
 * log E(i) is added to the running total (HMMER's sparse rescaling; we apply
 * the division to row i as row i+1 reads it, which multiplies the same
 * numbers).  Score = total + log(C(L) tCT).  Summation order within a row
 * differs from HMMER's striped order, so scores agree to float rounding
 * (~1e-6 relative), not bit for bit.
 *
 * Work: one work-item per pair; four nodes per float4 word (tables padded
 * with 0 to a multiple of 4 nodes); rows M, I, D in global scratch as words
 * interleaved by pair, as in viterbi.cl.
 */
#include "hmmcascade.h"
#include "warp.h"

/* Row i's specials from its E (nc: N/C/J move, loop; xe: E move, loop): N, C, J, B, and HMMER's
 * sparse rescaling when E > 1e4 (the specials divided by E, the next row read times *pscale = 1/E,
 * log E added to *totscale). */
inline void forward_specials(const float xE, const float2 nc, const float2 xe, float *xN, float *xC, float *xJ,
                             float *xB, float *pscale, float *totscale)
{
    *xN = *xN * nc.y;
    *xC = *xC * nc.y + xE * xe.x;
    *xJ = *xJ * nc.y + xE * xe.y;
    *xB = *xJ * nc.x + *xN * nc.x;
    if (xE > 1.0e4f) {
        *xN = *xN / xE;
        *xC = *xC / xE;
        *xJ = *xJ / xE;
        *xB = *xB / xE;
#ifdef cl_khr_fp64
        *pscale = (float) (1.0 / (double) xE);
#else
        *pscale = 1.0f / xE;
#endif
        *totscale = ADD_LOG_AS_HMMER(*totscale, xE);
    } else {
        *pscale = 1.0f;
    }
}

#if !defined(HMMC_PART) || HMMC_PART == 0
__kernel void forward_filter(
    __global const uchar *dsq,
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const float2 *seq_xf,   /* [n_seq] N/C/J (move, loop) probabilities */
    __global const int   *pair_seq,
    __global const int   *pair_model,
    const int n_pairs,
    const int max_Q,
    __global const float4 *msc,      /* per model [KP][Q] words of 4 nodes (odds) */
    __global const long  *msc_off,   /* [n_models] start, in words                */
    __global const float4 *tsc,      /* per model [Q][8] words (probabilities)    */
    __global const long  *tsc_off,   /* [n_models] start, in words                */
    __global const int   *model_M,
    __global const float2 *xf_e,     /* [n_models] E move, E loop                 */
    __global float4 *rows,           /* scratch: 3 * max_Q * n_pairs words        */
    __global float *out_nats)        /* [n_pairs] Forward score                   */
{
    const int p = get_global_id(0);
    if (p >= n_pairs) return;
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float4 *msc_m = msc + msc_off[m];
    __global const float4 *t = tsc + tsc_off[m];
    const long stride = n_pairs;
    __global float4 *mr = rows + p;
    __global float4 *ir = mr + (long) max_Q * stride;
    __global float4 *dr = ir + (long) max_Q * stride;

    const float2 nc = seq_xf[s];             /* .x move, .y loop */
    const float2 xe = xf_e[m];
    for (int q = 0; q < Q; q++) mr[q * stride] = ir[q * stride] = dr[q * stride] = (float4) (0.0f);

    float xN = 1.0f, xJ = 0.0f, xC = 0.0f;
    float xB = nc.x;
    float totscale = 0.0f;
    float pscale = 1.0f;                      /* pending rescale of the previous row */
    for (int i = 0; i < L; i++) {
        __global const float4 *e = msc_m + (int) x[i] * Q;
        const float4 xBv = (float4) (xB);
        float cm = 0.0f, ci = 0.0f, cd = 0.0f, dcarry = 0.0f;
        float4 xEv = (float4) (0.0f), xEdv = (float4) (0.0f);
        for (int q = 0; q < Q; q++) {
            __global const float4 *tq = t + q * N_TRANS;
            const float4 om = mr[q * stride] * pscale;
            const float4 oi = ir[q * stride] * pscale;
            const float4 od = dr[q * stride] * pscale;
            const float4 mpv = (float4) (cm, om.x, om.y, om.z);
            const float4 ipv = (float4) (ci, oi.x, oi.y, oi.z);
            const float4 dpv = (float4) (cd, od.x, od.y, od.z);
            cm = om.w; ci = oi.w; cd = od.w;
            float4 sv = xBv * tq[T_BM];
            sv = sv + mpv * tq[T_MM];
            sv = sv + ipv * tq[T_IM];
            sv = sv + dpv * tq[T_DM];
            sv = sv * e[q];
            xEv = xEv + sv;
            const float4 md = tq[T_MD], dd = tq[T_DD];
            float4 dv;
            dv.x = dcarry;
            dv.y = sv.x * md.x + dv.x * dd.x;
            dv.z = sv.y * md.y + dv.y * dd.y;
            dv.w = sv.z * md.z + dv.z * dd.z;
            dcarry = sv.w * md.w + dv.w * dd.w;
            xEdv = xEdv + dv;
            mr[q * stride] = sv;
            dr[q * stride] = dv;
            ir[q * stride] = om * tq[T_MI] + oi * tq[T_II];
        }
        const float xE = ((xEv.x + xEv.y) + (xEv.z + xEv.w)) + ((xEdv.x + xEdv.y) + (xEdv.z + xEdv.w));
        forward_specials(xE, nc, xe, &xN, &xC, &xJ, &xB, &pscale, &totscale);
    }
    out_nats[p] = ADD_LOG_AS_HMMER(totscale, xC * nc.x);
}


/* forward_wg: forward_filter's scores, bit for bit, with a work-group per pair (for the longest
 * pairs, which one work-item each would leave running alone at the end of a launch).  Word q of
 * a row (4 nodes) belongs to work-item q mod G, which computes its M and I cells from the
 * previous row (as forward_filter reads it, times the pending rescale); work-item 0 then walks
 * the D chain (D(k+1) = M(k) tMD_k + D(k) tDD_k) and the E lane sums in node order from the
 * M cells and M tMD products the others left in local memory, as forward_filter does in its
 * one pass, and the specials.  Rows (M, I, D: Q words each) at rows + pair * 3 * max_Q words,
 * rewritten in place once the previous row has been read whole.  Local memory: lw, 3 Q + 2
 * float4 words for the launch's largest Q.  Pair = group number, reversed (largest first). */
__kernel void forward_wg(
    __global const uchar *dsq,
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const float2 *seq_xf,
    __global const int   *pair_seq,
    __global const int   *pair_model,
    const int n_pairs,
    const int max_Q,
    __global const float4 *msc,
    __global const long  *msc_off,
    __global const float4 *tsc,
    __global const long  *tsc_off,
    __global const int   *model_M,
    __global const float2 *xf_e,
    __global float4 *rows,
    __global float *out_nats,
    __local float4 *lw)
{
    const int p = (int) (get_num_groups(0) - 1 - get_group_id(0));
    if (p >= n_pairs) return;   /* the whole group */
    const int lid = (int) get_local_id(0), G = (int) get_local_size(0);
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float4 *msc_m = msc + msc_off[m];
    __global const float4 *t = tsc + tsc_off[m];
    __global float4 *mr = rows + (long) p * 3 * max_Q;
    __global float4 *ir = mr + max_Q;
    __global float4 *dr = ir + max_Q;
    __local float4 *lsv = lw, *lmd = lw + Q, *liv = lw + 2 * Q;
    __local float *bc = (__local float *) (lw + 3 * Q);

    const float2 nc = seq_xf[s];
    const float2 xe = xf_e[m];
    for (int q = lid; q < Q; q += G) mr[q] = ir[q] = dr[q] = (float4) (0.0f);
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f;   /* work-item 0's */
    float xB = nc.x;
    float totscale = 0.0f;
    float pscale = 1.0f;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (int i = 0; i < L; i++) {
        __global const float4 *e = msc_m + (int) x[i] * Q;
        const float4 xBv = (float4) (xB);
        for (int q = lid; q < Q; q += G) {   /* M and I cells from the previous row */
            __global const float4 *tq = t + q * N_TRANS;
            const float4 om = mr[q] * pscale;
            const float4 oi = ir[q] * pscale;
            const float4 od = dr[q] * pscale;
            float cm = 0.0f, ci = 0.0f, cd = 0.0f;
            if (q > 0) { cm = mr[q - 1].w * pscale; ci = ir[q - 1].w * pscale; cd = dr[q - 1].w * pscale; }
            const float4 mpv = (float4) (cm, om.x, om.y, om.z);
            const float4 ipv = (float4) (ci, oi.x, oi.y, oi.z);
            const float4 dpv = (float4) (cd, od.x, od.y, od.z);
            float4 sv = xBv * tq[T_BM];
            sv = sv + mpv * tq[T_MM];
            sv = sv + ipv * tq[T_IM];
            sv = sv + dpv * tq[T_DM];
            sv = sv * e[q];
            lsv[q] = sv;
            lmd[q] = sv * tq[T_MD];
            liv[q] = om * tq[T_MI] + oi * tq[T_II];
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);   /* the previous row read whole */
        for (int q = lid; q < Q; q += G) { mr[q] = lsv[q]; ir[q] = liv[q]; }
        if (lid == 0) {   /* the D chain and the E lane sums, in node order; the specials */
            float dcarry = 0.0f;
            float4 xEv = (float4) (0.0f), xEdv = (float4) (0.0f);
            for (int q = 0; q < Q; q++) {
                const float4 dd = t[q * N_TRANS + T_DD];
                const float4 sv = lsv[q], smd = lmd[q];
                xEv = xEv + sv;
                float4 dv;
                dv.x = dcarry;
                dv.y = smd.x + dv.x * dd.x;
                dv.z = smd.y + dv.y * dd.y;
                dv.w = smd.z + dv.z * dd.z;
                dcarry = smd.w + dv.w * dd.w;
                xEdv = xEdv + dv;
                dr[q] = dv;
            }
            const float xE = ((xEv.x + xEv.y) + (xEv.z + xEv.w)) + ((xEdv.x + xEdv.y) + (xEdv.z + xEdv.w));
            forward_specials(xE, nc, xe, &xN, &xC, &xJ, &xB, &pscale, &totscale);
            bc[0] = xB; bc[1] = pscale; bc[2] = totscale; bc[3] = xC;   /* (read back from here at the end) */
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        xB = bc[0]; pscale = bc[1];
    }
    if (lid == 0) out_nats[p] = (L > 0) ? ADD_LOG_AS_HMMER(bc[2], bc[3] * nc.x) : LOG_AS_HMMER(0.0f * nc.x);
}
#endif

/* forward_warp<C>: forward_filter's scores to float rounding, one warp per pair, C nodes per lane
 * in registers (see forward_warp.h and warp.h). */

#if !defined(HMMC_PART) || HMMC_PART == 1
#define FW_C 4
#define FW_NAME forward_warp4
#include "forward_warp.h"
#undef FW_C
#undef FW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 2
#define FW_C 8
#define FW_NAME forward_warp8
#include "forward_warp.h"
#undef FW_C
#undef FW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 3
#define FW_C 12
#define FW_NAME forward_warp12
#include "forward_warp.h"
#undef FW_C
#undef FW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 4
#define FW_C 16
#define FW_NAME forward_warp16
#include "forward_warp.h"
#undef FW_C
#undef FW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 5
#define FW_C 24
#define FW_NAME forward_warp24
#define FW_TGLOBAL 1
#include "forward_warp.h"
#undef FW_C
#undef FW_NAME
#undef FW_TGLOBAL
#endif
#if !defined(HMMC_PART) || HMMC_PART == 6
#define FW_C 32
#define FW_NAME forward_warp32
#define FW_TGLOBAL 1
#include "forward_warp.h"
#undef FW_C
#undef FW_NAME
#undef FW_TGLOBAL
#endif
