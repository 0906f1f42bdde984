/* hmmcascade.h: layout and constants shared by the filter kernels.
 *
 * Residues are Easel digital codes 0..28 (KP = 29): 0..19 canonical,
 * 20 gap, 21..26 degenerate (B J Z O U X), 27 nonresidue, 28 missing.
 *
 * Model tables (built by hmmcascade.press from HMMER's own optimized
 * profile) are concatenated over models; each kernel receives the start of
 * its model's block:
 *
 *   emissions   [x * M + (k-1)]       x = residue code, k = node 1..M
 *   transitions [(k-1) * 8 + t]       t = BM MM IM DM (into M_k),
 *                                         MD MI II DD (out of node k)
 *
 * Two ways of laying out sequences on the device:
 *
 *   interleaved (MSV, all sequences of a batch against a model):
 *       dsq[i * n_seq + s]  residue i (0-based) of sequence s;
 *       neighbouring work-items read neighbouring bytes (coalesced).
 *   packed (pair kernels: bias, Viterbi, Forward, on filter survivors):
 *       dsq[seq_off[s] + i]
 *
 * Dynamic-programming rows live in global scratch, interleaved the same way
 * (row cell k of work-item w at [k * n_work + w]), so a warp's loads and
 * stores of one cell are contiguous.
 */
#ifndef HMMCASCADE_H
#define HMMCASCADE_H

#pragma OPENCL FP_CONTRACT OFF  /* no fused multiply-add: HMMER rounds a*b and +c separately */

#define KP 29
#define N_TRANS 8
#define T_BM 0
#define T_MM 1
#define T_IM 2
#define T_DM 3
#define T_MD 4
#define T_MI 5
#define T_II 6
#define T_DD 7

#define WORD_NEG_INF (-32768)
/* The tiled MSV kernels' word for a pair whose B state was not constant (a high scorer): a lower
 * bound lb (0..255) of HMMER's J(L) byte, written as MSV_LB_CODE - lb (-256 ... -511); HMMER's
 * score is at least lb's, or +infinity (overflow).  See msv.cl, msv_tiled_word. */
#define MSV_LB_CODE (-256)

/* HMMER computes a few logarithms in double precision and rounds them to
 * float; do the same where the device has doubles, so the result is the
 * same float. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define LOG_AS_HMMER(x) ((float) log((double) (x)))
#else
#define LOG_AS_HMMER(x) log(x)
#endif

/* t + log(x) as HMMER's forward_engine adds a log to its float totscale (ox->totscale += log(xE);
 * *opt_sc = ox->totscale + log(xC * move)): the sum in double, rounded to float once. */
#ifdef cl_khr_fp64
#define ADD_LOG_AS_HMMER(t, x) ((float) ((double) (t) + log((double) (x))))
#else
#define ADD_LOG_AS_HMMER(t, x) ((t) + log(x))
#endif

/* Special states of a float DP row (domains.cl, ensemble.cl): xmx[i * NX + XE ...] */
#define XE 0
#define XN 1
#define XJ 2
#define XB 3
#define XC 4
#define XSCALE 5
#define NX 6

/* trace state codes (HMMER's p7T_ numbering) */
#define ST_M 1
#define ST_D 2
#define ST_I 3
#define ST_S 4
#define ST_N 5
#define ST_B 6
#define ST_E 7
#define ST_C 8
#define ST_T 9
#define ST_J 10

/* The global id with work-groups taken in reverse order.  Job lists are sorted smallest
 * first; the GPU starts work-groups in id order, so reversing puts the largest jobs first
 * and lets the small ones fill the machine at the end of a launch instead of leaving the
 * largest to run alone.  Lanes keep their place within a work-group. */
#define REVERSED_GID() ((int) ((get_num_groups(0) - 1 - get_group_id(0)) * get_local_size(0) + get_local_id(0)))

/* Work-group-per-pair kernels (msv_exact_wg, viterbi_wg): GROUP_WG work-items, one NVIDIA
 * warp, so that on NVIDIA (build macros HMMC_PTX_SHFL / HMMC_PTX_REDUX, see
 * Device.ptx_options) the group's reductions and scans are warp shuffles or redux.sync
 * through inline PTX; elsewhere local memory and barriers (portable OpenCL C 1.2). */
#define GROUP_WG 32

/* The largest v over the work-group, returned to every work-item. */
inline uint group_max_u32(uint v, __local uint *red)
{
#if defined(HMMC_PTX_REDUX)
    uint r;
    asm volatile("redux.sync.max.u32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(v));
    return r;
#elif defined(HMMC_PTX_SHFL)
    for (int d = 16; d > 0; d >>= 1) {
        uint o;
        asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(o) : "r"(v), "r"(d));
        v = max(v, o);
    }
    return v;
#else
    const int lane = (int) get_local_id(0);
    red[lane] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0) {
        uint mx = red[0];
        for (int k = 1; k < GROUP_WG; k++) mx = max(mx, red[k]);
        red[0] = mx;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
#endif
}

#endif /* HMMCASCADE_H */
