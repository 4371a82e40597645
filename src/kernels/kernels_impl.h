// kernels/kernels_impl: private to kernels/: the AVX2 float ops and the per-KV-type attention primitives.
#pragma once
#include <cstdint>

#include "gguf/ggml_type.h"
#include "kernels/kernels.h"

namespace bee {

// Attention per KV type (one driver in attention.cpp, tiles of kAttnTile cells): the per-type steps are
// scoring a tile of stored K heads against the query heads of a GQA group and adding a tile of stored V
// heads, weighted, to their accumulators. Heads are whole blocks (n = head width padded to the block
// size, quant/turbo.h kv_padded_dim).
// rot_group > 0 (TurboQuant types): stored values are in the rotated domain (centroid · norm, no inverse
// rotation), so the driver rotates q once before scoring and un-rotates the accumulated output once.
// decode turns one stored head into n floats (nullptr with supported: F32 rows are read in place).
// note: score / accum (optional per type and ISA) read the stored bytes directly, converting in
// registers with no per-cell buffer. They must give the same bits as decode followed by the ISA's
// f32 tile kernels (AttnMath), which the driver uses on pre-decoded cells when several query rows
// share them: a row's result must not depend on the batch (DESIGN.md invariant 2).
constexpr int kAttnTile = 32;
using KvDecodeFn = void (*)(const uint8_t* head, float* out, int n);
// s[i * kAttnTile + c] = dot(q_i, K_c) for i < nh query heads (q: nh x dk floats), c < nt <= kAttnTile
// cells (heads[c]: cell c's stored K head). The per-cell reduction order is fixed by the ISA.
using KvScoreFn = void (*)(const float* q, int nh, int dk, const uint8_t* const* heads, int nt, float* s);
// acc_i[e] = acc_i[e] * corr[i] (the online softmax's rescale, one rounding; corr 1 leaves it exact), then
// acc_i[e] += p[i * kAttnTile + c] * V_c[e] for c = 0..nt-1 in order, one fused multiply-add each
// (acc: nh x dv floats).
// note: the rescale is fused here, on the accumulators already in registers: as a separate scalar pass
// in the driver it re-read what the kernel had just stored with masked stores (no store forwarding):
// 5-10% of attention at ~80 cells.
using KvAccumFn = void (*)(float* acc, int nh, int dv, const float* corr, const float* p, const uint8_t* const* heads,
                           int nt);
struct KvOps {
    KvDecodeFn decode = nullptr;
    int rot_group = 0;
    bool supported = false;
    KvScoreFn score = nullptr;  // fused (stored bytes); nullptr: decode + AttnMath::score
    KvAccumFn accum = nullptr;
};
// Ops for KV type t on the active ISA (supported == false: not a KV type).
KvOps kv_ops_for(GgmlType t);

// The SIMD tile kernels' compile-time shape for one pass of nh query heads: calls
// f.template operator()<NH, DK>() with NH = nh (1..4: the accumulators of 4 heads fit the registers) and
// DK = dk when it is 64, 128 or 256 (the loops over the head width unroll, so the accumulators stay in
// registers), else 0 (a run-time width). The arithmetic is the same for every shape.
template <class F>
void with_tile_shape(int nh, int dk, F&& f) {
    auto heads = [&]<int DK>() {
        switch (nh) {
            case 1: f.template operator()<1, DK>(); break;
            case 2: f.template operator()<2, DK>(); break;
            case 3: f.template operator()<3, DK>(); break;
            default: f.template operator()<4, DK>(); break;
        }
    };
    switch (dk) {
        case 64: heads.template operator()<64>(); break;
        case 128: heads.template operator()<128>(); break;
        case 256: heads.template operator()<256>(); break;
        default: heads.template operator()<0>(); break;
    }
}

// One online-softmax step of nh query heads over a tile; for head i, with s_i = s + i · kAttnTile (kAttnTile
// floats; past nt they may be written): x_c = scale · s_i[c] for c < nt; m' = max(m[i], max_c x_c);
// s_i[c] = exp(x_c − m'); corr[i] = exp(m[i] − m') (1 while m[i] is −inf; the caller's accumulator
// rescale, KvAccumFn); l[i] = l[i] · corr[i] + Σ_c s_i[c]; m[i] = m'. The order of the sum is fixed per
// ISA and a head's arithmetic does not depend on nh, so a row's result depends only on its own cells.
using SoftmaxStepFn = void (*)(float* s, int nh, int nt, float scale, float* m, float* l, float* corr);

// The tile kernels on f32 heads (heads[c] points at dk / dv floats) and the softmax step.
struct AttnMath {
    KvScoreFn score;
    KvAccumFn accum;
    SoftmaxStepFn softmax;
};
AttnMath attn_math_for();

// Per-ISA tables (kv_scalar.cpp, kv_avx2.cpp, kv_avx512.cpp); an ISA table returns decode == nullptr
// for types it has no fast decoder for, and kv_ops_for keeps the next ISA down's. score / accum are
// taken from the active ISA's table only (they must match that ISA's AttnMath bit for bit).
namespace kv_scalar {
KvOps ops(GgmlType t);
AttnMath attn_math();
}  // namespace kv_scalar

// AVX2+FMA+F16C versions (ops_avx2.cpp, kv_avx2.cpp); only called when cpu_isa() >= Isa::avx2.
namespace avx2_ops {
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void silu(float* x, int64_t n);
void gelu_tanh(float* x, int64_t n);
void silu_mul(float* x, const float* y, int64_t n);  // x = silu(x) * y
void gelu_tanh_mul(float* x, const float* y, int64_t n);
void softmax(float* x, int64_t n);
void exp_inplace(float* x, int64_t n);  // x[i] = exp(x[i]), ~1 ulp, flushes below exp(-87) to 0
void softmax_heads(float* s, int nh, int nt, float scale, float* m, float* l, float* corr);  // SoftmaxStepFn
KvOps kv_ops(GgmlType t);
AttnMath attn_math();
}  // namespace avx2_ops
namespace avx512_ops {
KvOps kv_ops(GgmlType t);
AttnMath attn_math();
}  // namespace avx512_ops

// Gated DeltaNet kernels per ISA (x86/gdn_avx2.cpp, x86/gdn_avx512.cpp; one body, x86/gdn_body.h): the
// contracts of conv1d_step, gdn_step, gdn_steps and sigmoid_mul in kernels.h.
namespace avx2_ops {
void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n);
void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o);
void sigmoid_mul(float* x, const float* g, int64_t n);
void gdn_steps(float* M, int dk, int dv, const GdnTokens& t, float scale);
}  // namespace avx2_ops
namespace avx512_ops {
void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n);
void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o);
void gdn_steps(float* M, int dk, int dv, const GdnTokens& t, float scale);
}  // namespace avx512_ops

}  // namespace bee
