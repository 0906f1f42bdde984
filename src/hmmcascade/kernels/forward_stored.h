/* forward_stored.h: the Forward pass of the warp kernels that keep every row; envelope_warp.h and
 * region_forward_warp.h include it with FS_C nodes per lane defined.  In scope there: lane, tmp,
 * L, x, nmove, nloop, emove, eloop, the transitions TRV(t, j), Pup[5] (forward_row.h), Mc, Ic, Dc,
 * e[FS_C], q0 and Q4 (the lane's first word, the model's words), em4, exs and ews (the emission
 * table and its layout), FROW(i) and FX(i, c) (row i's cells and specials).
 *
 * the envelope kernel's Forward rows (formerly forward_pass) 0..L (one row by forward_row.h) and its rescaling: where E > 1e4 the
 * specials are divided by E, the cells multiplied by 1/E, SCALE = E and log E added to totscale.
 * Declares xN, xJ, xC, xE, xB, totscale (their values after row L) and pM, pI, pD, and defines
 * FS_EMIS(xi) and FS_STORE(row), which the includer may use later and undefines at its end. */

/* e <- the emissions of residue code xi at the lane's nodes */
#define FS_EMIS(xi) {                                                                   \
        __global const float4 *e4_ = em4 + (int) (xi) * (exs / 4);                     \
        for (int w = 0; w < FS_C / 4; w++) {                                           \
            const float4 v = q0 + w < Q4 ? e4_[(q0 + w) * (ews / 4)] : (float4) (0.0f); \
            e[4 * w] = v.x; e[4 * w + 1] = v.y; e[4 * w + 2] = v.z; e[4 * w + 3] = v.w; \
        }                                                                               \
    }
/* the lane's words of the M, I, D blocks of a stored row (from its float4 word 0) */
#define FS_STORE(row) {                                                                 \
        __global float4 *r_ = (row);                                                    \
        for (int w = 0; w < FS_C / 4; w++) {                                           \
            if (q0 + w < Q4) {                                                          \
                r_[q0 + w] = (float4) (Mc[4 * w], Mc[4 * w + 1], Mc[4 * w + 2], Mc[4 * w + 3]); \
                r_[Q4 + q0 + w] = (float4) (Ic[4 * w], Ic[4 * w + 1], Ic[4 * w + 2], Ic[4 * w + 3]); \
                r_[2 * Q4 + q0 + w] = (float4) (Dc[4 * w], Dc[4 * w + 1], Dc[4 * w + 2], Dc[4 * w + 3]); \
            }                                                                           \
        }                                                                               \
    }
#pragma unroll
    for (int jj = 0; jj < FS_C; jj++) Mc[jj] = Ic[jj] = Dc[jj] = 0.0f;
    FS_STORE(FROW(0))
    float pM = 0.0f, pI = 0.0f, pD = 0.0f;         /* row i-1, node k0-1 */
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xE = 0.0f, xB = nmove, totscale = 0.0f;
    if (lane == 0) {
        FX(0, XE) = 0.0f; FX(0, XN) = 1.0f; FX(0, XJ) = 0.0f; FX(0, XB) = xB; FX(0, XC) = 0.0f;
        FX(0, XSCALE) = 1.0f;
    }
    for (int i = 1; i <= L; i++) {
        FS_EMIS(x[i - 1])
#define FR_C FS_C
#include "forward_row.h"
#undef FR_C
        xE = row_E;
        xN = xN * nloop;
        xC = xC * nloop + xE * emove;
        xJ = xJ * nloop + xE * eloop;
        xB = xJ * nmove + xN * nmove;
        float sc = 1.0f;
        if (xE > 1.0e4f) {                         /* uniform */
            xN = xN / xE; xC = xC / xE; xJ = xJ / xE; xB = xB / xE;
            sc = xE;
            totscale = ADD_LOG_AS_HMMER(totscale, xE);
            xE = 1.0f;
            const float sr = inv_as_hmmer(sc);    /* sparse rescaling, as HMMER: cells * (1/xE) */
#pragma unroll
            for (int jj = 0; jj < FS_C; jj++) { Mc[jj] *= sr; Ic[jj] *= sr; Dc[jj] *= sr; }
        }
        FS_STORE(FROW(i))
        if (lane == 0) {
            FX(i, XSCALE) = sc;
            FX(i, XE) = xE; FX(i, XN) = xN; FX(i, XJ) = xJ; FX(i, XB) = xB; FX(i, XC) = xC;
        }
        const float nm = fw_up(Mc[FS_C - 1], 1, lane, tmp);
        const float ni = fw_up(Ic[FS_C - 1], 1, lane, tmp);
        const float nd = fw_up(Dc[FS_C - 1], 1, lane, tmp);
        pM = lane ? nm : 0.0f; pI = lane ? ni : 0.0f; pD = lane ? nd : 0.0f;
    }
