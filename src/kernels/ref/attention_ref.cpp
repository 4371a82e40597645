// kernels/ref/attention_ref: two-pass attention in double over each row's visible cells (the oracle).
// K and V heads are decoded to the original domain by the quant reference (for TurboQuant types that
// includes the inverse rotation), so this checks the fast path's rotate-q / rotated-V algebra too.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "quant/turbo.h"

namespace bee::ref {

namespace {

// One head of type t at p (kv_head_bytes layout) -> head_dim floats; rot > 0: stored rotated in groups
// of rot (AttentionArgs::k_rot_group), un-rotated here.
void kv_head(GgmlType t, const uint8_t* p, int head_dim, int rot, std::vector<float>& out) {
    out.resize(kv_padded_dim(t, head_dim));
    quant_traits(t)->dequantize_row(p, out.data(), (int64_t)out.size());
    for (int g = 0; rot > 0 && g < head_dim; g += rot) turbo_unrotate(out.data() + g, rot);
}

}  // namespace

void attention(const AttentionArgs& a) {
    const int d = a.head_dim;
    const int group = a.n_head / a.n_head_kv;
    const size_t k_head_bytes = kv_head_bytes(a.k_type, d), v_head_bytes = kv_head_bytes(a.v_type, d);
    std::vector<double> s, o(d);
    std::vector<float> kv;
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
                kv_head(a.k_type, k, d, a.k_rot_group, kv);
                double dot = 0;
                for (int i = 0; i < d; i++) dot += (double)q[i] * kv[i];
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
                kv_head(a.v_type, v, d, a.v_rot_group, kv);
                for (int i = 0; i < d; i++) o[i] += s[c] / sum * kv[i];
            }
            for (int i = 0; i < d; i++) out[i] = (float)o[i];
        }
    }
}

}  // namespace bee::ref
