/* bias.cl: HMMER's biased-composition filter score (p7_bg_FilterScore).
 *
 * What it computes: for each (sequence, model) pair that passed the MSV
 * filter, the Forward score (nats) of Easel's two-state HMM
 * (esl_hmm_Forward) whose state 0 emits the background composition and
 * state 1 the model's composition:
 *
 *   t00 = p1 = L/(L+1)    t01 = 1 - p1           (p7_bg_SetLength)
 *   t10 = 1/(L1+1)        t11 = L1/(L1+1), L1 = M/8
 *   pi  = (0.999, 0.001); both states end with probability 1
 *   eo0(x) = 1 (background / background), eo1(x) = compo(x) / f(x)
 *
 *   d(1,k) = eo_k(x_1) pi_k,  d(i,k) = (sum_j d(i-1,j) t_jk) eo_k(x_i),
 *   each row divided by its maximum; score = sum_i log(max_i) + log(sum_k d(L,k))
 *
 * The host adds p7_bg_FilterScore's length terms.  Arithmetic follows
 * esl_hmm_Forward operation by operation (float, logs in double where the
 * device has them), so the score is HMMER's float.
 *
 * Work: one work-item per pair; sequences packed (see hmmcascade.h).
 */
#include "hmmcascade.h"

__kernel void bias_filter(
    __global const uchar *dsq,        /* packed residues                       */
    __global const long  *seq_off,    /* [n_seq] start of each sequence        */
    __global const int   *seq_len,    /* [n_seq]                               */
    __global const float *seq_p1,     /* [n_seq] L/(L+1)                       */
    __global const int   *pair_seq,   /* [n_pairs] sequence of each pair       */
    __global const int   *pair_model, /* [n_pairs] model of each pair          */
    const int n_pairs,
    __global const float *odds,       /* [n_models * KP] state-1 emission odds */
    __global const int   *model_M,    /* [n_models] nodes                      */
    __global float *out_nats)         /* [n_pairs] esl_hmm_Forward score       */
{
    const int p = get_global_id(0);
    if (p >= n_pairs) return;
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float *eo1 = odds + (long) m * KP;

    const float p1  = seq_p1[s];
    const float t00 = p1;
    const float t01 = 1.0f - p1;
    const float L1  = (float) model_M[m] / 8.0f;
    const float t10 = 1.0f / (L1 + 1.0f);
    const float t11 = L1 / (L1 + 1.0f);

    float d0 = 1.0f * 0.999f;
    float d1 = eo1[x[0]] * 0.001f;
    /* ESL_MAX(a, b) = a > b ? a : b, in esl_hmm_Forward's order (NaN and sign behaviour as in C) */
    float mx = (d0 > 0.0f) ? d0 : 0.0f;
    mx = (d1 > mx) ? d1 : mx;
    d0 /= mx;
    d1 /= mx;
    float logsc = LOG_AS_HMMER(mx);
    for (int i = 1; i < L; i++) {
        float n0 = (0.0f + d0 * t00) + d1 * t10;
        float n1 = (0.0f + d0 * t01) + d1 * t11;
        n1 *= eo1[x[i]];
        mx = (n0 > 0.0f) ? n0 : 0.0f;
        mx = (n1 > mx) ? n1 : mx;
        d0 = n0 / mx;
        d1 = n1 / mx;
        logsc += LOG_AS_HMMER(mx);
    }
    logsc += LOG_AS_HMMER((0.0f + d0 * 1.0f) + d1 * 1.0f);
    out_nats[p] = logsc;
}
