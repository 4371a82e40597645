// kernels/ref/gdn_ref: scalar references of the Gated DeltaNet kernels (conv1d_step, gdn_step; kernels.h).
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"

namespace bee::ref {

void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n) {
    for (int64_t c = 0; c < n; c++) {
        float s = 0.0f;
        for (int i = 0; i + 1 < k; i++) s += taps[(int64_t)i * ld + c] * state[(int64_t)i * ld + c];
        y[c] = s + taps[(int64_t)(k - 1) * ld + c] * x[c];
    }
    for (int i = 0; i + 2 < k; i++) memcpy(state + (int64_t)i * ld, state + (int64_t)(i + 1) * ld, n * sizeof(float));
    if (k >= 2) memcpy(state + (int64_t)(k - 2) * ld, x, n * sizeof(float));
}

void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o) {
    const float e = expf(g);
    for (int j = 0; j < dv; j++) {
        float* r = M + (int64_t)j * dk;  // (dk) row j of the transposed state
        float s = 0.0f;
        for (int i = 0; i < dk; i++) s += (e * r[i]) * k[i];
        const float d = beta * (v[j] - s);
        float a = 0.0f;
        for (int i = 0; i < dk; i++) {
            r[i] = d * k[i] + e * r[i];
            a += r[i] * q[i];
        }
        o[j] = scale * a;
    }
}

}  // namespace bee::ref
