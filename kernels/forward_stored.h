/* forward_stored.h: the Forward pass of the warp kernels that keep every row; envelope_warp.h and
 * region_forward_warp.h include it with FS_C nodes per lane, FS_EMIS(xi) (e[] <- the emissions of
 * residue code xi at the lane's nodes) and FS_STORE(row) (the lane's M, I, D words of a stored row)
 * defined.  In scope there: lane, tmp, L, x, nmove, nloop, emove, eloop, the transitions TRV(t, j),
 * Pup[5] (forward_row.h), Mc, Ic, Dc, e[FS_C], FROW(i) and FX(i, c) (row i's cells and specials).
 *
 * forward_pass's rows 0..L (one row by forward_row.h) and its rescaling: where E > 1e4 the
 * specials are divided by E, the cells multiplied by 1/E, SCALE = E and log E added to totscale.
 * Declares xN, xJ, xC, xE, xB, totscale (their values after row L) and pM, pI, pD. */
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
            totscale = totscale + LOG_AS_HMMER(xE);
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
