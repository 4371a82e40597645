// kernels/matmul: y = x · Wᵀ for every weight type (activations quantized once per row), and get_rows.
// Two drivers: the blocked one (kernels/gemm.h tiles) where the ISA has a tile kernel for the weight type,
// else one vec_dot per output element.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/kernels.h"

namespace bee {

namespace {

// Output rows per task. Fixed: the split never changes what a single output element computes.
constexpr int64_t kRowsPerTask = 16;
// The blocked driver's tasks are larger where the matrix allows (a multiple of the tile's rows, so tiles
// and rows16 groups never straddle tasks, which keeps every output's computation the same): about this many
// tasks per thread, so threads claim fewer tasks (each claim is an atomic on a line both threads write)
// and sweep longer contiguous runs of weights, ...
constexpr int64_t kTasksPerThread = 16;
// ... but one task's weight rows stay within this many bytes, so they remain in L2 while the token
// tiles of a prompt sweep over them.
constexpr size_t kTaskWeightBytes = 256 * 1024;
// Tokens per tile inside a task: the tile's activation rows stay in L1/L2 while the task's weight rows
// are swept, and the weight rows stay in cache across tiles.
constexpr int64_t kTokTile = 8;

[[noreturn]] void die(const char* what, GgmlType t) {
    fprintf(stderr, "bee: kernels: %s for type %s (%u)\n", what, ggml_type_name(t) ? ggml_type_name(t) : "?",
            (unsigned)t);
    abort();
}

// 64-byte aligned scratch of the calling thread; grows, never shrinks (no churn per call). `Slot` picks
// one of several independent buffers.
template <int Slot>
uint8_t* thread_scratch(size_t bytes) {
    static thread_local std::vector<uint8_t> buf;
    if (buf.size() < bytes + 64) buf.resize(bytes + 64);
    return (uint8_t*)(((uintptr_t)buf.data() + 63) & ~(uintptr_t)63);
}
// Quantized / prepared activations of a whole matmul (owned by the calling thread, read by all).
uint8_t* activation_scratch(size_t bytes) { return thread_scratch<0>(bytes); }
// One activation row in the kernel's act_type before it is prepared (per thread).
uint8_t* row_scratch(size_t bytes) { return thread_scratch<1>(bytes); }
// One weight row unpacked from a repacked layout back to GGUF bytes (per thread).
uint8_t* weight_row_scratch(size_t bytes) { return thread_scratch<2>(bytes); }

struct MatmulJob {
    VecDotFn dot;
    const uint8_t* w;  // (n_out, w_row_bytes), or repacked in `layout`
    size_t w_row_bytes;
    GgmlType wtype;
    WeightLayout layout;
    const uint8_t* a;  // (n_tok, a_row_bytes) activations in vec_dot_type
    size_t a_row_bytes;
    int64_t n_out, n_in, n_tok;
    float* y;        // (n_tok, n_out)
    const float* x;  // (n_tok, n_in) float activations
    QuantizeRowFn quantize;
    uint8_t* a_buf;  // (n_tok, a_row_bytes) scratch that `a` points to when x is converted
};

// Rows [o0, o1) for every token. note: rows outer, tokens inner, so weights are read from memory once.
void matmul_rows(const MatmulJob& j, int64_t o0, int64_t o1) {
    for (int64_t t0 = 0; t0 < j.n_tok; t0 += kTokTile) {
        const int64_t t1 = t0 + kTokTile < j.n_tok ? t0 + kTokTile : j.n_tok;
        for (int64_t o = o0; o < o1; o++) {
            const uint8_t* wrow = j.w + (size_t)o * j.w_row_bytes;
            if (j.layout != WeightLayout::gguf) {  // no tile for this layout on the active ISA
                uint8_t* row = weight_row_scratch(j.w_row_bytes);
                unpack_row(j.wtype, j.layout, j.w, j.n_out, j.n_in, o, row);
                wrow = row;
            }
            for (int64_t t = t0; t < t1; t++) {
                j.dot(j.n_in, wrow, j.a + (size_t)t * j.a_row_bytes, &j.y[t * j.n_out + o]);
            }
        }
    }
}

// matmul_gated's input: row t of x is act(gate_t) ⊙ up_t, formed in place just before the row is read.
struct Gated {
    float* gate;
    const float* up;
    GatedAct act;
    void row(int64_t t, int64_t n) const {
        float* g = gate + (size_t)t * n;
        if (act == GatedAct::silu) silu_mul(g, up + (size_t)t * n, n);
        else gelu_tanh_mul(g, up + (size_t)t * n, n);
    }
};

// Blocked driver, first half: activations quantized and prepared row by row into the calling thread's
// scratch (n_tok rows of gk.prepared_row_bytes(n_in)); with `gated`, x is gated->gate, formed row by row.
const uint8_t* prepare_activations(ThreadPool& pool, const GemmKernel& gk, int64_t n_in, const float* x, int64_t n_tok,
                                   const Gated* gated = nullptr) {
    const QuantizeRowFn quantize = quantize_activation_for(gk.act_type);
    if (!quantize) die("matmul: no activation quantizer", gk.act_type);
    const size_t q_row = ggml_row_size(gk.act_type, n_in), a_row = gk.prepared_row_bytes(n_in);
    uint8_t* a = activation_scratch(a_row * (size_t)n_tok);  // (n_tok, a_row) prepared activations
    pool.run((int)n_tok, [&](int t, int) {
        if (gated) gated->row(t, n_in);
        uint8_t* q = row_scratch(q_row);
        quantize(x + (size_t)t * n_in, q, n_in);
        gk.prepare(q, a + (size_t)t * a_row, n_in);
    });
    return a;
}

// Second half: per task (`rows` output rows) tiles of up to max_cols tokens × max_rows weight rows over the
// prepared activations a. note: tokens outer, so the task's weight rows stay in L1/L2 while the token
// tiles sweep over them.
struct TilePlan {
    const GemmKernel* gk;
    GgmlType wtype;
    const uint8_t* w;
    int64_t n_out, n_in;
    const uint8_t* a;  // prepared activations (n_tok, a_row)
    int64_t n_tok;
    float* y;
    size_t w_row, a_row;
    int64_t rows;  // output rows per task
    int n_tasks;
};

TilePlan plan_tiles(int n_threads, const GemmKernel& gk, GgmlType wtype, const uint8_t* w, int64_t n_out, int64_t n_in,
                    const uint8_t* a, int64_t n_tok, float* y) {
    if (kRowsPerTask % gk.max_rows != 0) die("matmul: a task must hold whole tiles (and rows16 groups)", wtype);
    TilePlan p{&gk, wtype, w, n_out, n_in, a, n_tok, y, ggml_row_size(wtype, n_in), gk.prepared_row_bytes(n_in), 0, 0};
    int64_t rows = (n_out + n_threads * kTasksPerThread - 1) / (n_threads * kTasksPerThread);
    const int64_t rows_fit = (int64_t)(kTaskWeightBytes / p.w_row);
    if (rows > rows_fit) rows = rows_fit;
    p.rows = rows < kRowsPerTask ? kRowsPerTask : (rows + gk.max_rows - 1) / gk.max_rows * gk.max_rows;
    p.n_tasks = (int)((n_out + p.rows - 1) / p.rows);
    return p;
}

void run_tile_task(const TilePlan& p, int task) {
    const GemmKernel& gk = *p.gk;
    const int64_t o0 = task * p.rows;
    const int64_t o1 = o0 + p.rows < p.n_out ? o0 + p.rows : p.n_out;
    for (int64_t t = 0; t < p.n_tok; t += gk.max_cols) {
        const int nc = (int)(p.n_tok - t < gk.max_cols ? p.n_tok - t : gk.max_cols);
        for (int64_t o = o0; o < o1; o += gk.max_rows) {
            const int nr = (int)(o1 - o < gk.max_rows ? o1 - o : gk.max_rows);
            const uint8_t* wt = p.w + (size_t)o * p.w_row;
            size_t ws = p.w_row;
            if (gk.locate) gk.locate(p.w, p.n_out, p.n_in, o, &wt, &ws);
            gk.tile(p.n_in, wt, ws, p.a + (size_t)t * p.a_row, p.a_row, nr, nc, p.y + (size_t)t * p.n_out + o,
                    (size_t)p.n_out);
        }
    }
}

void run_tiles(ThreadPool& pool, const GemmKernel& gk, GgmlType wtype, const uint8_t* w, int64_t n_out, int64_t n_in,
               const uint8_t* a, int64_t n_tok, float* y) {
    const TilePlan p = plan_tiles(pool.size(), gk, wtype, w, n_out, n_in, a, n_tok, y);
    pool.run(p.n_tasks, [&p](int task, int) { run_tile_task(p, task); });
}

// Two kernels read the same prepared activation bytes.
bool same_activations(const GemmKernel& a, const GemmKernel& b) {
    return a.act_type == b.act_type && a.prepare == b.prepare && a.prepared_row_bytes == b.prepared_row_bytes;
}

}  // namespace

namespace {

// matmul() and matmul_gated(): with `gated`, x == gated->gate and each row is formed before it is read.
void matmul_impl(ThreadPool& pool, GgmlType wtype, const void* w, int64_t n_out, int64_t n_in, const float* x,
                 int64_t n_tok, float* y, WeightLayout layout, const Gated* gated) {
    if (n_out <= 0 || n_tok <= 0) return;
    const QuantTraits* tr = quant_traits(wtype);
    if (!tr || !tr->vec_dot) die("matmul: no vec_dot", wtype);
    if (const GemmKernel* gk = gemm_kernel_for(wtype, layout)) {
        run_tiles(pool, *gk, wtype, (const uint8_t*)w, n_out, n_in,
                  prepare_activations(pool, *gk, n_in, x, n_tok, gated), n_tok, y);
        return;
    }
    MatmulJob j{};
    j.dot = vec_dot_for(wtype);
    j.w = (const uint8_t*)w;
    j.w_row_bytes = ggml_row_size(wtype, n_in);
    j.wtype = wtype;
    j.layout = layout;
    j.n_out = n_out;
    j.n_in = n_in;
    j.n_tok = n_tok;
    j.y = y;
    j.x = x;
    const GgmlType at = tr->vec_dot_type;
    if (at == GgmlType::F32) {
        if (gated) pool.run((int)n_tok, [gated, n_in](int t, int) { gated->row(t, n_in); });
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
        pool.run((int)n_tok, [&j, gated](int t, int) {
            if (gated) gated->row(t, j.n_in);
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

}  // namespace

void matmul(ThreadPool& pool, GgmlType wtype, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok,
            float* y, WeightLayout layout) {
    matmul_impl(pool, wtype, w, n_out, n_in, x, n_tok, y, layout, nullptr);
}

void matmul_gated(ThreadPool& pool, GgmlType wtype, const void* w, int64_t n_out, int64_t n_in, float* gate,
                  const float* up, GatedAct act, int64_t n_tok, float* y, WeightLayout layout) {
    const Gated g{gate, up, act};
    matmul_impl(pool, wtype, w, n_out, n_in, gate, n_tok, y, layout, &g);
}

void matmul_shared_input(ThreadPool& pool, const MatmulOut* outs, int n_outs, int64_t n_in, const float* x,
                         int64_t n_tok) {
    const GemmKernel* gk0 = n_outs > 0 && n_tok > 0 ? gemm_kernel_for(outs[0].wtype, outs[0].layout) : nullptr;
    bool shared = gk0 != nullptr;
    for (int i = 1; shared && i < n_outs; i++) {
        const GemmKernel* gk = gemm_kernel_for(outs[i].wtype, outs[i].layout);
        shared = gk && same_activations(*gk0, *gk);
    }
    if (!shared) {  // each converts its own activations
        for (int i = 0; i < n_outs; i++)
            matmul(pool, outs[i].wtype, outs[i].w, outs[i].n_out, n_in, x, n_tok, outs[i].y, outs[i].layout);
        return;
    }
    // One parallel region for all outputs: their tasks are numbered one after the other (a task never
    // spans two matrices, so each output element is computed as by its own matmul()).
    constexpr int kMaxOuts = 4;
    if (n_outs > kMaxOuts) die("matmul_shared_input: too many outputs", outs[0].wtype);
    const uint8_t* a = prepare_activations(pool, *gk0, n_in, x, n_tok);
    TilePlan plans[kMaxOuts];
    int first[kMaxOuts + 1] = {0};
    for (int i = 0; i < n_outs; i++) {
        const QuantTraits* tr = quant_traits(outs[i].wtype);
        if (!tr || !tr->vec_dot) die("matmul: no vec_dot", outs[i].wtype);
        plans[i] = plan_tiles(pool.size(), *gemm_kernel_for(outs[i].wtype, outs[i].layout), outs[i].wtype,
                              (const uint8_t*)outs[i].w, outs[i].n_out, n_in, a, n_tok, outs[i].y);
        first[i + 1] = first[i] + plans[i].n_tasks;
    }
    pool.run(first[n_outs], [&](int task, int) {
        int i = 0;
        while (task >= first[i + 1]) i++;
        run_tile_task(plans[i], task - first[i]);
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
