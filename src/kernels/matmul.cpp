// kernels/matmul: y = x · Wᵀ for every weight type (activations quantized once per row), and get_rows.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/kernels.h"

namespace bee {

namespace {

// Output rows per task. Fixed: the split never changes what a single output element computes.
constexpr int64_t kRowsPerTask = 16;
// Tokens per tile inside a task: the tile's activation rows stay in L1/L2 while the task's weight rows
// are swept, and the weight rows stay in cache across tiles.
constexpr int64_t kTokTile = 8;

[[noreturn]] void die(const char* what, GgmlType t) {
    fprintf(stderr, "bee: kernels: %s for type %s (%u)\n", what, ggml_type_name(t) ? ggml_type_name(t) : "?",
            (unsigned)t);
    abort();
}

// Scratch for quantized activations of the calling thread; grows, never shrinks (no churn per call).
uint8_t* activation_scratch(size_t bytes) {
    static thread_local std::vector<uint8_t> buf;
    if (buf.size() < bytes) buf.resize(bytes);
    return buf.data();
}

struct MatmulJob {
    VecDotFn dot;
    const uint8_t* w;  // (n_out, w_row_bytes)
    size_t w_row_bytes;
    const uint8_t* a;  // (n_tok, a_row_bytes) activations in vec_dot_type
    size_t a_row_bytes;
    int64_t n_out, n_in, n_tok;
    float* y;          // (n_tok, n_out)
    const float* x;    // (n_tok, n_in) float activations
    QuantizeRowFn quantize;
    uint8_t* a_buf;    // (n_tok, a_row_bytes) scratch that `a` points to when x is converted
};

// Rows [o0, o1) for every token. note: rows outer, tokens inner, so weights are read from memory once.
void matmul_rows(const MatmulJob& j, int64_t o0, int64_t o1) {
    for (int64_t t0 = 0; t0 < j.n_tok; t0 += kTokTile) {
        const int64_t t1 = t0 + kTokTile < j.n_tok ? t0 + kTokTile : j.n_tok;
        for (int64_t o = o0; o < o1; o++) {
            const uint8_t* wrow = j.w + (size_t)o * j.w_row_bytes;
            for (int64_t t = t0; t < t1; t++) {
                j.dot(j.n_in, wrow, j.a + (size_t)t * j.a_row_bytes, &j.y[t * j.n_out + o]);
            }
        }
    }
}

}  // namespace

void matmul(ThreadPool& pool, GgmlType wtype, const void* w, int64_t n_out, int64_t n_in, const float* x,
            int64_t n_tok, float* y) {
    if (n_out <= 0 || n_tok <= 0) return;
    const QuantTraits* tr = quant_traits(wtype);
    if (!tr || !tr->vec_dot) die("matmul: no vec_dot", wtype);
    MatmulJob j{};
    j.dot = vec_dot_for(wtype);
    j.w = (const uint8_t*)w;
    j.w_row_bytes = ggml_row_size(wtype, n_in);
    j.n_out = n_out;
    j.n_in = n_in;
    j.n_tok = n_tok;
    j.y = y;
    j.x = x;
    const GgmlType at = tr->vec_dot_type;
    if (at == GgmlType::F32) {
        j.a = (const uint8_t*)x;  // used as is
        j.a_row_bytes = (size_t)n_in * sizeof(float);
    } else {
        j.quantize = quantize_activation_for(at);
        if (!j.quantize) die("matmul: no activation quantizer", at);
        j.a_row_bytes = ggml_row_size(at, n_in);
        j.a_buf = activation_scratch(j.a_row_bytes * (size_t)n_tok);
        j.a = j.a_buf;
        // each row is quantized on its own, so the bytes of a row never depend on the batch.
        // note: lambdas capture one reference so std::function needs no heap allocation.
        pool.run((int)n_tok, [&j](int t, int) {
            j.quantize(j.x + (size_t)t * j.n_in, j.a_buf + (size_t)t * j.a_row_bytes, j.n_in);
        });
    }
    const int n_tasks = (int)((n_out + kRowsPerTask - 1) / kRowsPerTask);
    pool.run(n_tasks, [&j](int task, int) {
        const int64_t o0 = task * kRowsPerTask;
        const int64_t o1 = o0 + kRowsPerTask < j.n_out ? o0 + kRowsPerTask : j.n_out;
        matmul_rows(j, o0, o1);
    });
}

void get_rows(GgmlType type, const void* w, int64_t n, const int32_t* ids, int64_t n_ids, float* dst) {
    const QuantTraits* tr = quant_traits(type);
    if (!tr) die("get_rows: unsupported", type);
    const size_t row_bytes = ggml_row_size(type, n);
    for (int64_t i = 0; i < n_ids; i++) {
        tr->dequantize_row((const uint8_t*)w + (size_t)ids[i] * row_bytes, dst + i * n, n);
    }
}

}  // namespace bee
