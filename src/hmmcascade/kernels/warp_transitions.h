/* warp_transitions.h: a warp kernel's transitions as TRV(t, j) (transition t of the lane's node
 * k0 + j; 0 past the model), included by forward_warp.h, fb_parser_warp.h, envelope_warp.h and
 * region_forward_warp.h with WT_C (nodes per lane) and WT_WORDS (the model's words of 4 nodes)
 * defined, WT_TGLOBAL for the long-model variants, and WT_NEXT for the next lane's first
 * transitions (fb_parser_warp.h, envelope_warp.h).  In scope there: q0 (the lane's first
 * word) and t (the model's [Q][8] float4 transition words).
 *
 * Without WT_TGLOBAL the lane's transitions sit in registers, tr[t][j]; with it each TRV reads its
 * word where used (L1-cached): the 24- and 32-node variants would spill the registers. */
    const int wt_words = WT_WORDS;
#ifdef WT_TGLOBAL
#define TRV(tt, jj) ((q0 + (jj) / 4 < wt_words) ? ((__global const float *) (t + (q0 + (jj) / 4) * N_TRANS + (tt)))[(jj) % 4] : 0.0f)
#else
    float tr[N_TRANS][WT_C];                       /* transition t of node j: tr[t][j] */
#pragma unroll
    for (int w = 0; w < WT_C / 4; w++) {
#pragma unroll
        for (int tt = 0; tt < N_TRANS; tt++) {
            const float4 v = q0 + w < wt_words ? t[(q0 + w) * N_TRANS + tt] : (float4) (0.0f);
            tr[tt][4 * w] = v.x; tr[tt][4 * w + 1] = v.y; tr[tt][4 * w + 2] = v.z; tr[tt][4 * w + 3] = v.w;
        }
    }
#define TRV(tt, jj) tr[tt][jj]
#endif
#ifdef WT_NEXT
    /* node k0+C's tIM, tDM, tMM (the next lane's first node; 0 past the model): tIMn, tDMn, tMMn
     * (WT_NEXT: fw_down, lane and its scratch tmp in scope) */
    const float nIM = fw_down(TRV(T_IM, 0), 1, lane, tmp), nDM = fw_down(TRV(T_DM, 0), 1, lane, tmp),
                nMM = fw_down(TRV(T_MM, 0), 1, lane, tmp);
    const float tIMn = lane < 31 ? nIM : 0.0f, tDMn = lane < 31 ? nDM : 0.0f, tMMn = lane < 31 ? nMM : 0.0f;
#endif
#undef WT_C
#undef WT_WORDS
#undef WT_TGLOBAL
#undef WT_NEXT
