// kernels/kv_scalar: the portable KV head decoders of every KV storage type and the f32 tile kernels of
// the attention driver; the reference the AVX2 / AVX-512 tables are tested against, and the fallback
// where they have no decoder.
#include <cmath>
#include <cstring>

#include "kernels/kernels_impl.h"
#include "quant/quant.h"
#include "quant/turbo.h"

namespace bee::kv_scalar {

namespace {

// Tile kernels on f32 heads: one sequential dot per (head, cell); the accumulation in cell order.
void score(const float* q, int nh, int dk, const uint8_t* const* heads, int nt, float* s) {
    for (int c = 0; c < nt; c++) {
        const float* k = (const float*)heads[c];
        for (int i = 0; i < nh; i++) {
            const float* qi = q + (size_t)i * dk;
            float x = 0;
            for (int e = 0; e < dk; e++) x += qi[e] * k[e];
            s[i * kAttnTile + c] = x;
        }
    }
}

void accum(float* acc, int nh, int dv, const float* corr, const float* p, const uint8_t* const* heads, int nt) {
    for (int i = 0; i < nh; i++) {
        float* a = acc + (size_t)i * dv;
        for (int e = 0; e < dv; e++) a[e] *= corr[i];
        for (int c = 0; c < nt; c++) {
            const float* v = (const float*)heads[c];
            const float w = p[i * kAttnTile + c];
            for (int e = 0; e < dv; e++) a[e] += w * v[e];
        }
    }
}

// Float and legacy block types: the quant reference dequantizer.
template <GgmlType T>
void decode_dequant(const uint8_t* head, float* out, int n) {
    static const QuantTraits* tr = quant_traits(T);
    tr->dequantize_row(head, out, n);
}

// TurboQuant / TCQ: rotated-domain values, value[idx_j] · norm per group (no inverse rotation).
template <GgmlType T>
void decode_turbo(const uint8_t* head, float* out, int n) {
    static const TurboFormat& f = *turbo_format(T);
    static const size_t bytes = ggml_type_info(T).type_size;
    for (int b = 0; b < n / f.group; b++) turbo_decode_group_rotated(f, head + b * bytes, out + b * f.group);
}

#define BEE_KV_DEQUANT(T)                                           \
    case GgmlType::T: return { decode_dequant<GgmlType::T>, 0, true \
        }
#define BEE_KV_TURBO(T)                                                                          \
    case GgmlType::T: return { decode_turbo<GgmlType::T>, turbo_format(GgmlType::T)->group, true \
        }

}  // namespace

KvOps ops(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return {nullptr, 0, true};  // read in place
            BEE_KV_DEQUANT(F16);
            BEE_KV_DEQUANT(BF16);
            BEE_KV_DEQUANT(Q8_0);
            BEE_KV_DEQUANT(Q4_0);
            BEE_KV_DEQUANT(Q4_1);
            BEE_KV_DEQUANT(Q5_0);
            BEE_KV_DEQUANT(Q5_1);
            BEE_KV_TURBO(TURBO2);
            BEE_KV_TURBO(TURBO3);
            BEE_KV_TURBO(TURBO4);
            BEE_KV_TURBO(TURBO2_64);
            BEE_KV_TURBO(TURBO3_64);
            BEE_KV_TURBO(TURBO4_64);
            BEE_KV_TURBO(TURBO2_TCQ);
            BEE_KV_TURBO(TURBO3_TCQ);
        default: return {};
    }
}

#undef BEE_KV_DEQUANT
#undef BEE_KV_TURBO

namespace {

// One head of the softmax step one element at a time, the sum in cell order.
float softmax_step(float* s, int nt, float scale, float* m, float* l) {
    float tmax = -INFINITY;
    for (int c = 0; c < nt; c++) {
        s[c] *= scale;
        tmax = s[c] > tmax ? s[c] : tmax;
    }
    float corr = 1.0f;
    if (tmax > *m) {
        if (*m != -INFINITY) corr = expf(*m - tmax);
        *l *= corr;
        *m = tmax;
    }
    for (int c = 0; c < nt; c++) {
        s[c] = expf(s[c] - *m);
        *l += s[c];
    }
    return corr;
}

void softmax_heads(float* s, int nh, int nt, float scale, float* m, float* l, float* corr) {
    for (int i = 0; i < nh; i++) corr[i] = softmax_step(s + i * kAttnTile, nt, scale, m + i, l + i);
}

}  // namespace

AttnMath attn_math() { return {score, accum, softmax_heads}; }

}  // namespace bee::kv_scalar
