// kernels/attention: one attention driver (fixed-tile online softmax) over any KV type's dot/axpy primitives.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/cpu.h"
#include "base/fp16.h"
#include "kernels/kernels.h"
#include "kernels/kernels_impl.h"

namespace bee {

namespace {

// Cells per tile of the online softmax. Tiles are cut by index in the row's visible list, so a row's
// result depends only on its list, never on the batch (DESIGN.md invariant 2).
constexpr int kTile = 32;

float kv_dot_f32(const float* q, const uint8_t* k_row, int n) {
    const float* k = (const float*)k_row;
    float s = 0;
    for (int i = 0; i < n; i++) s += q[i] * k[i];
    return s;
}

float kv_dot_f16(const float* q, const uint8_t* k_row, int n) {
    const fp16_t* k = (const fp16_t*)k_row;
    float s = 0;
    for (int i = 0; i < n; i++) s += q[i] * fp16_to_fp32(k[i]);
    return s;
}

void kv_axpy_f32(float* acc, float p, const uint8_t* v_row, int n) {
    const float* v = (const float*)v_row;
    for (int i = 0; i < n; i++) acc[i] += p * v[i];
}

void kv_axpy_f16(float* acc, float p, const uint8_t* v_row, int n) {
    const fp16_t* v = (const fp16_t*)v_row;
    for (int i = 0; i < n; i++) acc[i] += p * fp16_to_fp32(v[i]);
}

void exp_scalar(float* x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = expf(x[i]);
}

struct AttnJob {
    const AttentionArgs* a;
    KvOps kops, vops;
    size_t k_head_bytes, v_head_bytes;  // bytes of one kv head's row in K / V
    void (*exp_fn)(float*, int64_t);
};

// out (head_dim) for query row r, head h. acc: (head_dim) scratch.
void attend_one(const AttnJob& j, int r, int h, float* acc) {
    const AttentionArgs& a = *j.a;
    const int d = a.head_dim;
    const int kvh = h / (a.n_head / a.n_head_kv);
    const float* q = a.q + ((size_t)r * a.n_head + h) * d;
    float* out = a.out + ((size_t)r * a.n_head + h) * d;
    const int32_t* cells = a.visible[r]->data();
    const int n = (int)a.visible[r]->size();
    memset(acc, 0, (size_t)d * sizeof(float));
    const uint8_t* kb = a.k + kvh * j.k_head_bytes;
    const uint8_t* vb = a.v + kvh * j.v_head_bytes;
    const float inv_cap = a.softcap > 0 ? 1.0f / a.softcap : 0.0f;
    float m = -INFINITY, l = 0;
    float s[kTile];  // (tile) scores, then probabilities relative to m
    for (int t0 = 0; t0 < n; t0 += kTile) {
        const int nt = n - t0 < kTile ? n - t0 : kTile;
        float tmax = -INFINITY;
        for (int c = 0; c < nt; c++) {
            float x = a.scale * j.kops.dot(q, kb + (size_t)cells[t0 + c] * a.k_cell_bytes, d);
            if (a.softcap > 0) x = a.softcap * tanhf(x * inv_cap);
            s[c] = x;
            tmax = x > tmax ? x : tmax;
        }
        if (tmax > m) {
            if (m != -INFINITY) {
                const float corr = expf(m - tmax);
                for (int i = 0; i < d; i++) acc[i] *= corr;
                l *= corr;
            }
            m = tmax;
        }
        for (int c = 0; c < nt; c++) s[c] -= m;
        j.exp_fn(s, nt);
        for (int c = 0; c < nt; c++) {
            l += s[c];
            j.vops.axpy(acc, s[c], vb + (size_t)cells[t0 + c] * a.v_cell_bytes, d);
        }
    }
    const float inv = l > 0 ? 1.0f / l : 0.0f;  // empty list: zeros
    for (int i = 0; i < d; i++) out[i] = acc[i] * inv;
}

}  // namespace

KvOps kv_ops_for(GgmlType t) {
    const bool avx2 = cpu_isa() >= Isa::avx2;
    KvOps ops;
    if (t == GgmlType::F32) {
        ops.dot = avx2 ? avx2_ops::kv_dot_f32 : kv_dot_f32;
        ops.axpy = avx2 ? avx2_ops::kv_axpy_f32 : kv_axpy_f32;
    } else if (t == GgmlType::F16) {
        ops.dot = avx2 ? avx2_ops::kv_dot_f16 : kv_dot_f16;
        ops.axpy = avx2 ? avx2_ops::kv_axpy_f16 : kv_axpy_f16;
    }
    return ops;
}

bool attention_supports_kv_type(GgmlType t) { return kv_ops_for(t).dot != nullptr; }

void attention(ThreadPool& pool, const AttentionArgs& a) {
    if (a.n_rows <= 0 || a.n_head <= 0) return;
    AttnJob j;
    j.a = &a;
    j.kops = kv_ops_for(a.k_type);
    j.vops = kv_ops_for(a.v_type);
    if (!j.kops.dot || !j.vops.axpy) {
        fprintf(stderr, "bee: attention: unsupported KV types %u/%u\n", (unsigned)a.k_type, (unsigned)a.v_type);
        abort();
    }
    j.k_head_bytes = ggml_row_size(a.k_type, a.head_dim);
    j.v_head_bytes = ggml_row_size(a.v_type, a.head_dim);
    j.exp_fn = cpu_isa() >= Isa::avx2 ? avx2_ops::exp_inplace : exp_scalar;
    pool.run(a.n_rows * a.n_head, [&j](int task, int) {
        static thread_local std::vector<float> acc;  // (head_dim)
        if ((int)acc.size() < j.a->head_dim) acc.resize(j.a->head_dim);
        attend_one(j, task / j.a->n_head, task % j.a->n_head, acc.data());
    });
}

}  // namespace bee
