/* warp.h: lane exchanges of the warp-per-pair kernels (viterbi_warp, forward_warp,
 * fb_parser_warp): 32 lanes, one warp per work-group.  On NVIDIA (HMMC_PTX_SHFL / HMMC_PTX_REDUX,
 * see Device.ptx_options) warp shuffles and redux.sync through inline PTX; elsewhere local memory
 * `tmp` (32 words) with barriers, which every lane of the work-group must reach together. */
#ifndef HMMC_WARP_H
#define HMMC_WARP_H

#define VW_LANES 32

/* int v of lane - d (lanes below d: their own v) */
inline int vw_up(const int v, const int d, const int lane, __local int *tmp)
{
#if defined(HMMC_PTX_SHFL)
    int r;
    asm("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(r) : "r"(v), "r"(d));
    return r;
#else
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[lane] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    return lane >= d ? tmp[lane - d] : v;
#endif
}

/* the largest v over the warp, to every lane */
inline int vw_max(int v, const int lane, __local int *tmp)
{
#if defined(HMMC_PTX_REDUX)
    int r;
    asm("redux.sync.max.s32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(v));
    return r;
#elif defined(HMMC_PTX_SHFL)
    for (int d = 16; d > 0; d >>= 1) {
        int o;
        asm("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(o) : "r"(v), "r"(d));
        v = max(v, o);
    }
    return v;
#else
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[lane] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    int r = tmp[0];
    for (int l = 1; l < VW_LANES; l++) r = max(r, tmp[l]);
    return r;
#endif
}

/* int v of lane + d (lanes 32 - d and above: their own v) */
inline int vw_down(const int v, const int d, const int lane, __local int *tmp)
{
#if defined(HMMC_PTX_SHFL)
    int r;
    asm("shfl.sync.down.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(d));
    return r;
#else
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[lane] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    return lane + d < VW_LANES ? tmp[lane + d] : v;
#endif
}

#if defined(HMMC_PTX_SHFL)
/* (inline PTX only: the callers keep a portable path of their own)
 * the lanes whose pred is nonzero, bit per lane (every lane of the warp must call it) */
inline uint vw_ballot(const int pred)
{
    uint r;
    asm("{ .reg .pred p; setp.ne.s32 p, %1, 0; vote.sync.ballot.b32 %0, p, 0xffffffff; }" : "=r"(r) : "r"(pred));
    return r;
}

/* int v of lane src, to every lane */
inline int vw_idx(const int v, const int src)
{
    int r;
    asm("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(src));
    return r;
}

#ifdef cl_khr_fp64
/* a double of lane - d (lanes below d: their own), and of lane src */
inline double dw_up(const double v, const int d)
{
    int2 b = as_int2(v);
    int2 r;
    asm("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(r.x) : "r"(b.x), "r"(d));
    asm("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(r.y) : "r"(b.y), "r"(d));
    return as_double(r);
}

inline double dw_idx(const double v, const int src)
{
    const int2 b = as_int2(v);
    return as_double((int2) (vw_idx(b.x, src), vw_idx(b.y, src)));
}
#endif /* cl_khr_fp64 */
#endif /* HMMC_PTX_SHFL */

/* the same moves of a float's bits */
inline float fw_up(const float v, const int d, const int lane, __local int *tmp)
{
    return as_float(vw_up(as_int(v), d, lane, tmp));
}

inline float fw_down(const float v, const int d, const int lane, __local int *tmp)
{
    return as_float(vw_down(as_int(v), d, lane, tmp));
}

/* The Forward warp kernels' D scan (forward_row.h): from P, the product of tDD over the lane's
 * nodes, Pup[st] = the product over this lane's and the 2^st - 1 lanes' below it that step st of
 * the scan has gathered (the factor a value coming up 2^st lanes is multiplied by). */
inline void fw_dd_products(float P, const int lane, __local int *tmp, float *Pup)
{
#pragma unroll
    for (int st = 0; st < 5; st++) {
        const int d = 1 << st;
        Pup[st] = P;
        const float o = fw_up(P, d, lane, tmp);
        if (lane >= d) P = P * o;
    }
}

/* the sum of v over the warp, the same float in every lane */
inline float fw_sum(float v, const int lane, __local int *tmp)
{
#if defined(HMMC_PTX_SHFL)
    for (int d = 1; d < 32; d <<= 1) {   /* butterfly: both partners add the same two floats */
        float o;
        asm("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(o) : "f"(v), "r"(d));
        v = v + o;
    }
    return v;
#else
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[lane] = as_int(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    float r = 0.0f;
    for (int l = 0; l < 32; l++) r = r + as_float(tmp[l]);
    return r;
#endif
}

/* the largest v over the warp (max is exact in any order), the same float in every lane */
inline float fw_max(float v, const int lane, __local int *tmp)
{
#if defined(HMMC_PTX_SHFL)
    for (int d = 1; d < 32; d <<= 1) {
        float o;
        asm("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(o) : "f"(v), "r"(d));
        v = fmax(v, o);
    }
    return v;
#else
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[lane] = as_int(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    float r = as_float(tmp[0]);
    for (int l = 1; l < 32; l++) r = fmax(r, as_float(tmp[l]));
    return r;
#endif
}

#endif /* HMMC_WARP_H */
