// kernels/ref/attention_ref: two-pass attention in double over each row's visible cells (the oracle).
#include <cmath>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernels.h"

namespace bee::ref {

namespace {

// Element i of the (type t) row at p, as double; F32 and F16 only.
double kv_elem(GgmlType t, const uint8_t* p, int i) {
    if (t == GgmlType::F16) {
        fp16_t h;
        memcpy(&h, p + 2 * i, 2);
        return fp16_to_fp32(h);
    }
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
}

}  // namespace

void attention(const AttentionArgs& a) {
    const int d = a.head_dim;
    const int group = a.n_head / a.n_head_kv;
    const size_t k_head_bytes = ggml_row_size(a.k_type, d), v_head_bytes = ggml_row_size(a.v_type, d);
    std::vector<double> s, o(d);
    for (int r = 0; r < a.n_rows; r++) {
        const std::vector<int32_t>& cells = *a.visible[r];
        const int n = (int)cells.size();
        for (int h = 0; h < a.n_head; h++) {
            const int kvh = h / group;
            const float* q = a.q + ((size_t)r * a.n_head + h) * d;
            float* out = a.out + ((size_t)r * a.n_head + h) * d;
            s.assign(n, 0.0);
            double mx = -INFINITY;
            for (int c = 0; c < n; c++) {
                const uint8_t* k = a.k + (size_t)cells[c] * a.k_cell_bytes + kvh * k_head_bytes;
                double dot = 0;
                for (int i = 0; i < d; i++) dot += (double)q[i] * kv_elem(a.k_type, k, i);
                dot *= a.scale;
                if (a.softcap > 0) dot = a.softcap * std::tanh(dot / a.softcap);
                s[c] = dot;
                mx = dot > mx ? dot : mx;
            }
            double sum = 0;
            for (int c = 0; c < n; c++) {
                s[c] = std::exp(s[c] - mx);
                sum += s[c];
            }
            o.assign(d, 0.0);
            for (int c = 0; c < n; c++) {
                const uint8_t* v = a.v + (size_t)cells[c] * a.v_cell_bytes + kvh * v_head_bytes;
                for (int i = 0; i < d; i++) o[i] += s[c] / sum * kv_elem(a.v_type, v, i);
            }
            for (int i = 0; i < d; i++) out[i] = (float)o[i];
        }
    }
}

}  // namespace bee::ref
