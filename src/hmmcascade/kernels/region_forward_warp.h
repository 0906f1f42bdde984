/* region_forward_warp.h: the body of the region_forward_warp<C> kernels (domains.cl includes it once
 * per chunk size, with RF_C nodes per lane and the kernel's name RF_NAME defined; RF_TGLOBAL:
 * transitions read from memory where used, the long-model variants).
 *
 * The envelope kernel's Forward-only mode (mode & 1 == 0: a multi-domain region's multihit
 * Forward matrix, sampled from by region_ensemble) with one warp (32 work-items) per job; lane l
 * holds nodes l*C+1 .. l*C+C of a DP row and their transitions in registers (models of M <= 32*C
 * nodes; the host sends longer ones to envelope).  Same arguments as envelope; same outputs as its
 * mode 0, at p = scr + scr_off[j], contiguous (ws = 1):
 *
 *   F  [(L+1)][3][W]: row i at float 3W i, its M, I, D blocks of W = 4 ceil(M/4) floats, node k
 *      at k-1 of each block (nodes past M: 0);
 *   fx [(L+1)][6] after F, at float 3W (L+1): E N J B C SCALE of row i at 6 i;
 *   info[j] = (Forward score in nats, 0, 0, 0).
 *
 * Row i: forward_row.h (M and I from row i-1 in registers; the D chain by a scan over the lanes,
 * E by a butterfly sum), then forward_pass's specials with the job's length model xfm (N move,
 * N loop, E move, E loop; J and C as N) and its rescaling: where E > 1e4 the specials / E, the
 * row's cells * (1/E) (HMMER's sparse rescaling), SCALE = E, the log added to the score, E = 1.
 * The D chain and E sum inside a row in another order than forward_pass, so cells, specials and
 * the score agree with envelope's mode 0 to float rounding.
 */

#define RF_Q (RF_C / 4)              /* words of 4 nodes per lane */

__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void RF_NAME(
    ENVELOPE_JOB_ARGS)
{
    __local int tmp[32];
    const int lane = (int) get_local_id(0);
    const int j = (int) get_num_groups(0) - 1 - (int) get_group_id(0);   /* largest jobs first */
    if (j >= n_jobs) return;                       /* the whole group */
    const int s = job_seq[j], m = job_model[j];
    const int M = model_M[m];
    const int Q4 = (M + 3) / 4, W = 4 * Q4;       /* 4-node words, nodes of a stored row */
    const int L = job_len[j];
    __global const uchar *x = dsq + seq_off[s] + (job_i[j] - 1);
    __global const float4 *em4 = (__global const float4 *) (msc + msc_off[m] * 4);
    __global const float4 *t = (__global const float4 *) (tsc + tsc_off[m] * 4);
    const float4 xfm = job_xfm[j];
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float *p = scr + scr_off[j];
    const int exs = (mode & 2) ? 4 : W, ews = (mode & 2) ? 4 * KP : 4;   /* emission table layout, floats */
    const long fx0 = (long) (L + 1) * 3 * W;      /* the specials block */
    const int q0 = lane * RF_Q;                    /* the lane's first word */
#define FX(i, c) p[fx0 + (long) (i) * NX + (c)]
#define FROW(i) ((__global float4 *) (p + (long) (i) * 3 * W))

#define WT_C RF_C
#define WT_WORDS Q4
#ifdef RF_TGLOBAL
#define WT_TGLOBAL
#endif
#include "warp_transitions.h"

    /* the D scan's running products of tDD over the lanes below */
    float Pup[5];
    {
        float P = 1.0f;
#pragma unroll
        for (int jj = 0; jj < RF_C; jj++) P = P * TRV(T_DD, jj);
        fw_dd_products(P, lane, tmp, Pup);
    }

    float Mc[RF_C], Ic[RF_C], Dc[RF_C], e[RF_C];
#define FS_C RF_C
#include "forward_stored.h"
    if (lane == 0) info[j] = (float4) (ADD_LOG_AS_HMMER(totscale, xC * nmove), 0.0f, 0.0f, 0.0f);
#undef FX
#undef FROW
#undef FS_STORE
#undef FS_EMIS
#undef FS_C
}

#undef RF_Q
#undef TRV
