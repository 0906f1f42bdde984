/* fb_parser_warp.h: the body of the fb_parser_warp<C> kernels (domains.cl includes it once per
 * chunk size, with PW_C nodes per lane and the kernel's name PW_NAME defined).
 *
 * fb_parser's work (the Forward and Backward parsers over the whole target, p7_DomainDecoding and
 * the region loop) with one warp (32 work-items) per job; lane l holds nodes l*C+1 .. l*C+C of a
 * DP row and their transitions in registers (models of M <= 32*C nodes, C <= 16; the host sends
 * longer ones to fb_parser_wg or fb_parser).  Only the residue records reach global memory: the job's scratch is
 * contiguous (ws = 1), record i (16 floats: Forward specials E N J B C SCALE, Backward specials,
 * btot, etot, mocc) at float 16 i, as fb_parser's records with rec0 = 0.
 *
 * Forward: the envelope kernel's Forward rows (formerly forward_pass), as forward_warp computes them (D chain by a scan over the lanes,
 * E by a butterfly sum), with forward_pass's rescaling (the row times 1/E, the specials divided).
 *
 * Backward: the envelope kernel's Backward rows (formerly backward_pass), descending (backward_row.h: the D chain D(i,k) = a_k +
 * D(i,k+1) tDD_k, a_k = M(i+1,k+1) e tDM_{k+1} + E(i), by a scan from the last lane down; M(i,k)
 * then takes D(i,k+1)); B(i-1) is the warp sum of M(i,k) e(x_i,k) tBM_k.  Scale factors as
 * backward_pass: the Forward's, or its own once B exceeds 1e16.
 *
 * The sums inside a row run in another order than fb_parser's, so values agree with it (and with
 * HMMER) to float rounding, as fb_parser's own agree with HMMER's striped order; the decoding
 * and region loop (lane 0) are fb_parser's, float for float.
 */

#define PW_Q (PW_C / 4)              /* words of 4 nodes per lane */

__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void PW_NAME(
    __global const uchar *dsq, __global const long *seq_off, __global const int *seq_len,
    __global const float4 *seq_xfm,
    __global const int2 *job, __global const long *scr_off, const int j0, const int n_jobs,
    __global const float4 *msc, __global const long *msc_off,   /* the filters' [x][Q] words */
    __global const float4 *tsc, __global const long *tsc_off, __global const int *model_M,
    __global float *scr, const int region_cap, __global int *out)
{
    __local int tmp[32];
    const int lane = (int) get_local_id(0);
    const int j = j0 + (int) get_num_groups(0) - 1 - (int) get_group_id(0);   /* largest jobs first */
    if (j >= n_jobs) return;                       /* the whole group */
    const int s = job[j].x, m = job[j].y;
    const int M = model_M[m];
    const int Q = (M + 3) / 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float4 *msc_m = msc + msc_off[m];
    __global const float4 *t = tsc + tsc_off[m];
    const float4 xfm = seq_xfm[s];
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float *rp = scr + scr_off[j];        /* residue records, 16 floats each */
    const int q0 = lane * PW_Q;
    const int k0 = lane * PW_C + 1;                /* the lane's first node */

#define WT_C PW_C
#define WT_WORDS Q
#define WT_NEXT
#include "warp_transitions.h"

    /* products of tDD: the lane's, and its running products over the scans' steps, upward
     * (Forward: lanes below) and downward (Backward: lanes above) */
    float P = 1.0f;
#pragma unroll
    for (int jj = 0; jj < PW_C; jj++) P = P * TRV(T_DD, jj);
    float Pup[5], Pdn[5];
    {
        float Pu = P, Pd = P;
#pragma unroll
        for (int st = 0; st < 5; st++) {
            const int d = 1 << st;
            Pup[st] = Pu; Pdn[st] = Pd;
            const float ou = fw_up(Pu, d, lane, tmp);
            const float od = fw_down(Pd, d, lane, tmp);
            if (lane >= d) Pu = Pu * ou;
            if (lane + d < 32) Pd = Pd * od;
        }
    }

    float Mc[PW_C], Ic[PW_C], Dc[PW_C], e[PW_C];
#define PW_EMIS(xi) {                                                                   \
        __global const float4 *e4_ = msc_m + (int) (xi) * Q + q0;                      \
        for (int w = 0; w < PW_Q; w++) {                                               \
            const float4 v = q0 + w < Q ? e4_[w] : (float4) (0.0f);                    \
            e[4 * w] = v.x; e[4 * w + 1] = v.y; e[4 * w + 2] = v.z; e[4 * w + 3] = v.w; \
        }                                                                               \
    }

    /* ---- Forward parser ---- */
#pragma unroll
    for (int jj = 0; jj < PW_C; jj++) Mc[jj] = Ic[jj] = Dc[jj] = 0.0f;
    float pM = 0.0f, pI = 0.0f, pD = 0.0f;         /* row i-1, node k0-1 */
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xE = 0.0f;
    float xB = nmove;
    if (lane == 0) {
        rp[XE] = 0.0f; rp[XN] = 1.0f; rp[XJ] = 0.0f; rp[XB] = xB; rp[XC] = 0.0f; rp[XSCALE] = 1.0f;
    }
    float totscale = 0.0f;
    for (int i = 1; i <= L; i++) {
        PW_EMIS(x[i - 1])
#define FR_C PW_C
#include "forward_row.h"
#undef FR_C
        xE = row_E;
        xN = xN * nloop;
        xC = xC * nloop + xE * emove;
        xJ = xJ * nloop + xE * eloop;
        xB = xJ * nmove + xN * nmove;
        float scale = 1.0f;
        if (xE > 1.0e4f) {                         /* uniform */
            xN = xN / xE; xC = xC / xE; xJ = xJ / xE; xB = xB / xE;
            const float sc = inv_as_hmmer(xE);
#pragma unroll
            for (int jj = 0; jj < PW_C; jj++) { Mc[jj] *= sc; Ic[jj] *= sc; Dc[jj] *= sc; }
            scale = xE;
            totscale = ADD_LOG_AS_HMMER(totscale, xE);
            xE = 1.0f;
        }
        if (lane == 0) {
            __global float *r = rp + 16 * (long) i;
            r[XSCALE] = scale; r[XE] = xE; r[XN] = xN; r[XJ] = xJ; r[XB] = xB; r[XC] = xC;
        }
        const float nm = fw_up(Mc[PW_C - 1], 1, lane, tmp);
        const float ni = fw_up(Ic[PW_C - 1], 1, lane, tmp);
        const float nd = fw_up(Dc[PW_C - 1], 1, lane, tmp);
        pM = lane ? nm : 0.0f; pI = lane ? ni : 0.0f; pD = lane ? nd : 0.0f;
    }
    const float fsc = ADD_LOG_AS_HMMER(totscale, xC * nmove);
    barrier(CLK_GLOBAL_MEM_FENCE);                 /* lane 0's records, read by every lane */

    /* ---- Backward parser ---- */
#pragma unroll
    for (int jj = 0; jj < PW_C; jj++) Ic[jj] = 0.0f;   /* no row L+1: row L's I cells are 0 */
    int own = 0;
    xJ = 0.0f; xB = 0.0f; xN = 0.0f;
    xC = nmove;
    xE = xC * emove;
    float xbn = 0.0f;                              /* B(i-1): this row's M e tBM, summed over the warp */
    for (int i = L; i >= 1; i--) {
        float sc;
        if (i < L) {
            xB = xbn;
            xC = xC * nloop;
            xJ = (xB * nmove) + (xJ * nloop);
            xN = (xB * nmove) + (xN * nloop);
            xE = (xC * emove) + (xJ * eloop);
            if (xB > 1.0e16f) own = 1;
            sc = own ? ((xB > 1.0e4f) ? xB : 1.0f) : rp[16 * (long) i + XSCALE];
        } else {
            sc = rp[16 * (long) L + XSCALE];
        }
        const float s = (sc > 1.0f) ? inv_as_hmmer(sc) : 1.0f;
        /* row i from row i+1 (Mc, Ic: final, scaled; none at row L) */
#define BR_C PW_C
#define BR_EMIS PW_EMIS
#include "backward_row.h"
#undef BR_C
#undef BR_EMIS
        if (sc > 1.0f) { xE = xE / sc; xN = xN / sc; xJ = xJ / sc; xB = xB / sc; xC = xC / sc; }
        if (lane == 0) {
            __global float *r = rp + 16 * (long) i + R_BX;
            r[XSCALE] = sc; r[XE] = xE; r[XN] = xN; r[XJ] = xJ; r[XB] = xB; r[XC] = xC;
        }
        xbn = row_up ? fw_sum(row_bs, lane, tmp) : 0.0f;
    }
    {   /* row 0: only N and B; B from row 1's M cells */
        PW_EMIS(x[0])
        float bs = 0.0f;
#pragma unroll
        for (int jj = 0; jj < PW_C; jj++) if (k0 + jj <= M) bs = bs + (Mc[jj] * e[jj]) * TRV(T_BM, jj);
        xB = L > 0 ? fw_sum(bs, lane, tmp) : 0.0f;
        xN = (xB * nmove) + (xN * nloop);
        if (lane == 0) {
            __global float *r = rp + R_BX;
            r[XB] = xB; r[XC] = 0.0f; r[XJ] = 0.0f; r[XN] = xN; r[XE] = 0.0f; r[XSCALE] = 1.0f;
        }
    }
#undef PW_EMIS
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lane != 0) return;

    /* ---- p7_DomainDecoding and the region loop: fb_parser's, on lane 0 ---- */
    domain_decoding(rp, 1, 0, L, nloop, own, fsc, region_cap, out + (long) j * (6 + 2 * region_cap));
}

#undef PW_Q
#undef TRV
