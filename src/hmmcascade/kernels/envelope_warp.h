/* envelope_warp.h: the body of the envelope_warp<C> kernels (domains.cl includes it once per chunk
 * size, C <= 16, with EW_C nodes per lane and the kernel's name EW_NAME defined).
 *
 * envelope_wg's work (the envelope kernel's full mode, mode & 1) with one warp (32 work-items) per
 * envelope; lane l holds nodes l*C+1 .. l*C+C of a DP row and their transitions in registers
 * (models of M <= 32*C nodes; the host sends longer ones to envelope_wg or envelope).  Same
 * arguments, scratch layout (the full layout with ws = 1: row i at i * R, R = 6W + 24) and
 * outputs as envelope_wg.  Per envelope of L residues:
 *
 *   1. Forward, rows 1..L stored: forward_row.h (the D chain by a scan over the lanes, E by a
 *      butterfly sum), envelope_wg's specials and rescaling (the row times 1/E when E > 1e4).
 *   2. Backward, rows L..1 stored: backward_row.h (the D chain by a scan from the top lane
 *      down), the Forward's scale factors or its own once B exceeds 1e16; B(i-1) a warp sum.
 *   3. One pass over rows 1..L: p7_Decoding (B cells <- posteriors, D cells 0; decode_specials
 *      on lane 0), the null2 column sums (in row order, in registers) and p7_OptimalAccuracy's
 *      row (M and I from the previous OA row in registers; the D chain D(k+1) = max(masked
 *      M(k), masked D(k)) is max-only, so the lane's map x -> pass ? max(A, x) : A composes
 *      exactly and a scan over the lanes gives envelope_wg's floats; the row's maximum to lane
 *      0, which runs oa_specials).  F cells <- OA scores.
 *   4. Where the decoding overflowed (isinf(scaleproduct)) only info = (envsc, 0, 0, 1); else
 *      p7_Null2_ByExpectation's odds (null2_residue, a residue per lane) from the column sums in
 *      F row 0, F row 0 <- -inf, and oa_trace and oa_display on lane 0.
 *
 * Steps 1 and 2 sum inside a row in another order than envelope_wg, so scores, posteriors and
 * the OA scores agree with it to float rounding; step 3 is elementwise or max-only, each value
 * the same float expression of its operands as in envelope_wg.
 */

#define EW_Q (EW_C / 4)              /* words of 4 nodes per lane */

__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void EW_NAME(
    ENVELOPE_JOB_ARGS)
{
    __local int tmp[32];
    const int lane = (int) get_local_id(0);
    const int j = (int) get_num_groups(0) - 1 - (int) get_group_id(0);   /* largest jobs first */
    if (j >= n_jobs) return;                       /* the whole group */
    const int s = job_seq[j], m = job_model[j];
    const int M = model_M[m];
    const int Q4 = (M + 3) / 4, W = 4 * Q4;       /* 4-node words, nodes of a stored row */
    const int Qs = max(2, (M - 1) / 4 + 1);        /* HMMER's striped vectors (null2, traceback) */
    const int L = job_len[j];                      /* the envelope's length (Ld in envelope) */
    __global const uchar *x = dsq + seq_off[s] + (job_i[j] - 1);
    __global const float *em = msc + msc_off[m] * 4;
    __global const float4 *em4 = (__global const float4 *) em;
    __global const float *tf = tsc + tsc_off[m] * 4;
    __global const float4 *t = (__global const float4 *) tf;
    const float4 xfm = job_xfm[j];
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float *p = scr + scr_off[j];
    const int exs = (mode & 2) ? 4 : W, ews = (mode & 2) ? 4 * KP : 4;   /* emission table layout, floats */
    const int R = 6 * W + 24;
    const long B0 = 3 * W, fx0 = 6 * W, bx0 = fx0 + NX, px0 = bx0 + NX, ox0 = px0 + NX;
    const int q0 = lane * EW_Q;                    /* the lane's first word */
    const int k0 = lane * EW_C + 1;                /* the lane's first node */
#define FX(i, c) p[(long) (i) * R + fx0 + (c)]
#define BX(i, c) p[(long) (i) * R + bx0 + (c)]
#define PX(i, c) p[(long) (i) * R + px0 + (c)]
#define OX(i, c) p[(long) (i) * R + ox0 + (c)]
#define FROW(i) ((__global float4 *) (p + (long) (i) * R))
#define BROW(i) ((__global float4 *) (p + (long) (i) * R + B0))

#define WT_C EW_C
#define WT_WORDS Q4
#define WT_NEXT
#include "warp_transitions.h"

    /* the scans' running products of tDD (Forward: lanes below, Backward: lanes above) and the
     * OA chain's running pass flags (lanes below; the lane passes D on where all its tDD > 0) */
    float P = 1.0f;
    int pass = 1;
#pragma unroll
    for (int jj = 0; jj < EW_C; jj++) { P = P * TRV(T_DD, jj); pass = pass && (TRV(T_DD, jj) > 0.0f); }
    float Pup[5], Pdn[5];
    int Oup[5];
    {
        float Pu = P, Pd = P;
#pragma unroll
        for (int st = 0; st < 5; st++) {
            const int d = 1 << st;
            Pup[st] = Pu; Pdn[st] = Pd; Oup[st] = pass;
            const float ou = fw_up(Pu, d, lane, tmp);
            const float od = fw_down(Pd, d, lane, tmp);
            const int op = vw_up(pass, d, lane, tmp);
            if (lane >= d) { Pu = Pu * ou; pass = pass && op; }
            if (lane + d < 32) Pd = Pd * od;
        }
    }

    float Mc[EW_C], Ic[EW_C], Dc[EW_C], e[EW_C];

    /* ---- 1. Forward (envelope_wg's, rows stored) ---- */
#define FS_C EW_C
#include "forward_stored.h"
    const float envsc = ADD_LOG_AS_HMMER(totscale, xC * nmove);   /* the same float in every lane */
    barrier(CLK_GLOBAL_MEM_FENCE);                 /* lane 0's specials, read by every lane */

    /* ---- 2. Backward (envelope_wg's, rows stored) ---- */
#pragma unroll
    for (int jj = 0; jj < EW_C; jj++) Ic[jj] = 0.0f;   /* no row L+1: row L's I cells are 0 */
    int own = 0;
    xJ = 0.0f; xB = 0.0f; xN = 0.0f; xC = nmove; xE = xC * emove;
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
            sc = own ? ((xB > 1.0e4f) ? xB : 1.0f) : FX(i, XSCALE);
        } else {
            sc = FX(L, XSCALE);
        }
        const float s = (sc > 1.0f) ? inv_as_hmmer(sc) : 1.0f;
#define BR_C EW_C
#define BR_EMIS FS_EMIS
#include "backward_row.h"
#undef BR_C
#undef BR_EMIS
        FS_STORE(BROW(i))
        if (sc > 1.0f) { xE = xE / sc; xN = xN / sc; xJ = xJ / sc; xB = xB / sc; xC = xC / sc; }
        if (lane == 0) {
            BX(i, XSCALE) = sc;
            BX(i, XE) = xE; BX(i, XN) = xN; BX(i, XJ) = xJ; BX(i, XB) = xB; BX(i, XC) = xC;
        }
        xbn = row_up ? fw_sum(row_bs, lane, tmp) : 0.0f;
    }
    {   /* row 0: only N and B; B from row 1's M cells */
        FS_EMIS(x[0])
        float bs = 0.0f;
#pragma unroll
        for (int jj = 0; jj < EW_C; jj++) if (k0 + jj <= M) bs = bs + (Mc[jj] * e[jj]) * TRV(T_BM, jj);
        xB = L > 0 ? fw_sum(bs, lane, tmp) : 0.0f;
        xN = (xB * nmove) + (xN * nloop);
        if (lane == 0) {
            BX(0, XB) = xB; BX(0, XC) = 0.0f; BX(0, XJ) = 0.0f; BX(0, XN) = xN; BX(0, XE) = 0.0f;
            BX(0, XSCALE) = 1.0f;
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);

    /* ---- 3. p7_Decoding, the null2 column sums and p7_OptimalAccuracy, row by row ---- */
    const float NEG = -INFINITY;
    float scaleproduct = inv_as_hmmer(BX(0, XN));
#pragma unroll
    for (int jj = 0; jj < EW_C; jj++) Mc[jj] = Ic[jj] = Dc[jj] = 0.0f;
    FS_STORE(BROW(0))
#pragma unroll
    for (int jj = 0; jj < EW_C; jj++) Mc[jj] = Ic[jj] = Dc[jj] = NEG;   /* OA row 0 (to F row 0 after null2) */
    pM = NEG; pI = NEG; pD = NEG;
    if (lane == 0) {
        PX(0, XE) = 0.0f; PX(0, XN) = 0.0f; PX(0, XJ) = 0.0f; PX(0, XC) = 0.0f; PX(0, XB) = 0.0f;
        PX(0, XSCALE) = 1.0f;
        OX(0, XE) = NEG; OX(0, XN) = 0.0f; OX(0, XJ) = NEG; OX(0, XB) = 0.0f; OX(0, XC) = NEG;
        OX(0, XSCALE) = 1.0f;
    }
    float am[EW_C], ai[EW_C];                      /* null2: column sums of the M and I posteriors */
#pragma unroll
    for (int jj = 0; jj < EW_C; jj++) am[jj] = ai[jj] = 0.0f;
    for (int i = 1; i <= L; i++) {
        barrier(CLK_GLOBAL_MEM_FENCE);             /* lane 0's OX(i-1), read by every lane */
        __global float4 *f = FROW(i);
        __global float4 *b = BROW(i);
        const float totr = scaleproduct * FX(i, XSCALE);
        const float xBv = OX(i - 1, XB);
        /* posteriors of the lane's words; M and I of the OA row, descending (node jn reads row
         * i-1 at nodes jn-1, still unchanged, and jn) */
#pragma unroll
        for (int w = EW_Q - 1; w >= 0; w--) {
            float4 pm4 = (float4) (0.0f), pi4 = (float4) (0.0f);
            if (q0 + w < Q4) {
                const int q = q0 + w;
                pm4 = (f[q] * b[q]) * totr;
                pi4 = (f[Q4 + q] * b[Q4 + q]) * totr;
                b[q] = pm4; b[2 * Q4 + q] = (float4) (0.0f); b[Q4 + q] = pi4;
            }
            const float ppm[4] = {pm4.x, pm4.y, pm4.z, pm4.w}, ppi[4] = {pi4.x, pi4.y, pi4.z, pi4.w};
#pragma unroll
            for (int c = 3; c >= 0; c--) {
                const int jn = 4 * w + c;
                const float mp = jn ? Mc[jn - 1] : pM, ip = jn ? Ic[jn - 1] : pI, dp = jn ? Dc[jn - 1] : pD;
                float sv = (TRV(T_BM, jn) > 0.0f) ? xBv : 0.0f;
                sv = fmax(sv, (TRV(T_MM, jn) > 0.0f) ? mp : 0.0f);
                sv = fmax(sv, (TRV(T_IM, jn) > 0.0f) ? ip : 0.0f);
                sv = fmax(sv, (TRV(T_DM, jn) > 0.0f) ? dp : 0.0f);
                sv = sv + ppm[c];
                float iv = (TRV(T_MI, jn) > 0.0f) ? Mc[jn] : 0.0f;
                iv = fmax(iv, (TRV(T_II, jn) > 0.0f) ? Ic[jn] : 0.0f);
                Mc[jn] = sv; Ic[jn] = iv + ppi[c];
                am[jn] = (i == 1) ? ppm[c] : ppm[c] + am[jn];
                ai[jn] = (i == 1) ? ppi[c] : ppi[c] + ai[jn];
            }
        }
        /* the D chain: the lane's map from D(k0) (A: its value from -inf), the scan, the replay */
        float A = NEG;
#pragma unroll
        for (int jn = 0; jn < EW_C; jn++)
            A = fmax((TRV(T_MD, jn) > 0.0f) ? Mc[jn] : 0.0f, (TRV(T_DD, jn) > 0.0f) ? A : 0.0f);
#pragma unroll
        for (int st = 0; st < 5; st++) {
            const int d = 1 << st;
            const float o = fw_up(A, d, lane, tmp);
            if (lane >= d && Oup[st]) A = fmax(A, o);
        }
        const float din = fw_up(A, 1, lane, tmp);
        float dv = lane ? din : NEG;
        float xEo = NEG;                           /* the row's maximum over nodes 1..W */
#pragma unroll
        for (int jn = 0; jn < EW_C; jn++) {
            Dc[jn] = dv;
            if (k0 + jn <= W) xEo = fmax(xEo, fmax(Mc[jn], dv));
            dv = fmax((TRV(T_MD, jn) > 0.0f) ? Mc[jn] : 0.0f, (TRV(T_DD, jn) > 0.0f) ? dv : 0.0f);
        }
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) xEo = fmax(xEo, fw_down(xEo, d, lane, tmp));   /* to lane 0 */
        FS_STORE(f)
        if (lane == 0) {
            decode_specials(p, 1, R, W, i, nloop, scaleproduct);
            oa_specials(p, 1, R, W, i, xEo, xfm);
        }
        if (own) scaleproduct = scaleproduct * (FX(i, XSCALE) / BX(i, XSCALE));
        const float nm = fw_up(Mc[EW_C - 1], 1, lane, tmp);
        const float ni = fw_up(Ic[EW_C - 1], 1, lane, tmp);
        const float nd = fw_up(Dc[EW_C - 1], 1, lane, tmp);
        pM = lane ? nm : NEG; pI = lane ? ni : NEG; pD = lane ? nd : NEG;
    }
    /* decoding overflowed (the same in every lane): info (envsc, 0, 0, 1) and nothing else.  No
     * return before the barriers below: with one, PoCL 3.1 ran the region after the last barrier
     * 32 times, each as lane 0 (two oa_display copies: cols overran) */
    const int ok = !isinf(scaleproduct);

    /* ---- 4. p7_Null2_ByExpectation, up to the odds (workspace: F row 0); the traceback ---- */
#ifdef cl_khr_fp64
    const float norm = (float) (1.0 / (double) (float) L);
#else
    const float norm = 1.0f / (float) L;
#endif
#pragma unroll
    for (int jj = 0; jj < EW_C; jj++) { Mc[jj] = am[jj] * norm; Ic[jj] = ai[jj] * norm; Dc[jj] = NEG; }
    if (ok) FS_STORE(FROW(0))
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (ok && lane < 20) {
        float aN = PX(1, XN), aC = PX(1, XC), aJ = PX(1, XJ);
        for (int i = 2; i <= L; i++) { aN = aN + PX(i, XN); aC = aC + PX(i, XC); aJ = aJ + PX(i, XJ); }
        aN = aN * norm; aC = aC * norm; aJ = aJ * norm;
        const float xfactor = (aN + aC) + aJ;
        null2[null2_off[j] + lane] = null2_residue(p, 1, W, M, Qs, em + lane * exs, ews, xfactor);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
#pragma unroll
    for (int jj = 0; jj < EW_C; jj++) Mc[jj] = Ic[jj] = NEG;
    if (ok) FS_STORE(FROW(0))
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lane == 0 && !ok) info[j] = (float4) (envsc, 0.0f, 0.0f, 1.0f);
    if (lane == 0 && ok) {
        const float oasc = OX(L, XC);
        const int nt = oa_trace(p, 1, R, W, M, Qs, L, tf, xfm, trace + trace_off[j], trace_pp + trace_off[j]);
        info[j] = (float4) (envsc, oasc, (float) nt, 0.0f);
        oa_display(trace + trace_off[j], trace_pp + trace_off[j], nt, L + M + 8, disp + 2 * j, disp + 2 * n_jobs,
                   cols);
    }
#undef FX
#undef BX
#undef PX
#undef OX
#undef FROW
#undef BROW
#undef FS_EMIS
#undef FS_STORE
#undef FS_C
}

#undef EW_Q
#undef TRV
