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
 * Work: one work-item per pair; rows M, I, D in global scratch interleaved
 * by pair, as in viterbi.cl.
 */
#include "hmmcascade.h"

__kernel void forward_filter(
    __global const uchar *dsq,
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const float2 *seq_xf,   /* [n_seq] N/C/J (move, loop) probabilities */
    __global const int   *pair_seq,
    __global const int   *pair_model,
    const int n_pairs,
    const int max_M,
    __global const float *msc,       /* concatenated [KP * M] match odds         */
    __global const long  *emis_off,
    __global const float *tsc,       /* concatenated [M * 8] transitions         */
    __global const long  *trans_off,
    __global const int   *model_M,
    __global const float2 *xf_e,     /* [n_models] E move, E loop                */
    __global float *rows,            /* scratch: 3 * max_M * n_pairs floats      */
    __global float *out_nats)        /* [n_pairs] Forward score                  */
{
    const int p = get_global_id(0);
    if (p >= n_pairs) return;
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int M = model_M[m];
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float *msc_m = msc + emis_off[m];
    __global const float *t = tsc + trans_off[m];
    const long stride = n_pairs;
    __global float *mr = rows + p;
    __global float *ir = mr + (long) max_M * stride;
    __global float *dr = ir + (long) max_M * stride;

    const float2 nc = seq_xf[s];             /* .x move, .y loop */
    const float2 xe = xf_e[m];
    for (int k = 0; k < M; k++) mr[k * stride] = ir[k * stride] = dr[k * stride] = 0.0f;

    float xN = 1.0f, xJ = 0.0f, xC = 0.0f;
    float xB = nc.x;
    float totscale = 0.0f;
    float pscale = 1.0f;                      /* pending rescale of the previous row */
    for (int i = 0; i < L; i++) {
        __global const float *e = msc_m + (int) x[i] * M;
        float mpv = 0.0f, ipv = 0.0f, dpv = 0.0f, dcv = 0.0f;
        float xE = 0.0f, xEd = 0.0f;
        for (int k = 0; k < M; k++) {
            __global const float *tk = t + k * N_TRANS;
            float sv = xB * tk[T_BM];
            sv = sv + mpv * tk[T_MM];
            sv = sv + ipv * tk[T_IM];
            sv = sv + dpv * tk[T_DM];
            sv = sv * e[k];
            xE = xE + sv;
            mpv = mr[k * stride] * pscale;
            dpv = dr[k * stride] * pscale;
            ipv = ir[k * stride] * pscale;
            mr[k * stride] = sv;
            dr[k * stride] = dcv;
            xEd = xEd + dcv;
            ir[k * stride] = mpv * tk[T_MI] + ipv * tk[T_II];
            dcv = sv * tk[T_MD] + dcv * tk[T_DD];
        }
        xE = xE + xEd;
        xN = xN * nc.y;
        xC = xC * nc.y + xE * xe.x;
        xJ = xJ * nc.y + xE * xe.y;
        xB = xJ * nc.x + xN * nc.x;
        if (xE > 1.0e4f) {
            xN = xN / xE;
            xC = xC / xE;
            xJ = xJ / xE;
            xB = xB / xE;
#ifdef cl_khr_fp64
            pscale = (float) (1.0 / (double) xE);
#else
            pscale = 1.0f / xE;
#endif
            totscale = totscale + LOG_AS_HMMER(xE);
        } else {
            pscale = 1.0f;
        }
    }
    out_nats[p] = totscale + LOG_AS_HMMER(xC * nc.x);
}
