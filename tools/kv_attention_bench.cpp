// tools/kv_attention_bench: times the attention of one generated token (one query row) over a deep KV
// cache of one layer, per KV type, with the head shapes of SmolLM2-135M (9 q / 3 kv heads x 64) and
// Gemma 3 270M (4 q / 1 kv head x 256). Types are measured in alternating rounds (the machine is
// shared and noisy) and the median per type is printed. The cache holds random rows: the cost of
// attention does not depend on the values. Not part of the build; compile against a build dir:
//
//   g++ -O2 -std=c++20 -I src tools/kv_attention_bench.cpp -o /tmp/kv_attention_bench build/libbee_kernels.a
//       build/libbee_quant.a build/libbee_gguf.a build/libbee_base.a -lpthread        (one command line)
//   /tmp/kv_attention_bench 8192 32768
//   BENCH_TYPES=f16,turbo3 BENCH_SHAPE=gemma BENCH_THREADS=1 BENCH_CLOCK=cpu /tmp/kv_attention_bench 8192
//
// The server's multi-row step: BENCH_ROWS=8 gives 8 query rows of `depth` cells each, interleaved in the
// cache as generated tokens of 8 slots are (row r sees cells r, r + 8, r + 16, ...), and BENCH_LAYERS=30
// cycles through 30 copies of the cache as a model's layers do (so it does not stay in L2). The last
// column is then nanoseconds per cell and kv head (row · cell · kv head):
//   BENCH_ROWS=8 BENCH_LAYERS=30 BENCH_TYPES=f16 BENCH_THREADS=1 BENCH_CLOCK=cpu /tmp/kv_attention_bench 80 200 400
// BENCH_SHARED=1 makes the rows those of one sequence instead (a verify batch, a prefill chunk): row r
// sees cells 0 .. depth - 1 + r.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "quant/turbo.h"

using namespace bee;

namespace {

struct Shape {
    const char* name;
    int n_head, n_head_kv, head_dim;
};

struct Cache {
    GgmlType t;
    size_t cell_bytes;
    std::vector<uint8_t> k, v;
};

Cache make_cache(GgmlType t, const Shape& s, int n_cells) {
    const int padded = kv_padded_dim(t, s.head_dim);
    const size_t hb = kv_head_bytes(t, s.head_dim);
    Cache c{t, hb * s.n_head_kv, {}, {}};
    c.k.resize(c.cell_bytes * n_cells);
    c.v.resize(c.cell_bytes * n_cells);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    std::vector<float> x(padded, 0.0f);
    // Encoding every cell (TCQ's Viterbi especially) is slow: encode 64 distinct cells and repeat them.
    const int distinct = std::min(n_cells, 64);
    for (int cell = 0; cell < n_cells; cell++)
        for (int h = 0; h < s.n_head_kv; h++)
            for (std::vector<uint8_t>* dst : {&c.k, &c.v}) {
                uint8_t* p = dst->data() + cell * c.cell_bytes + h * hb;
                if (cell >= distinct) {
                    memcpy(p, dst->data() + (cell % distinct) * c.cell_bytes + h * hb, hb);
                    continue;
                }
                for (int i = 0; i < s.head_dim; i++) x[i] = nd(rng);
                quant_traits(t)->quantize_row(x.data(), p, padded);
            }
    return c;
}

// One attention call per rep over rows.size() rows, cycling through the layers' caches.
double time_attention(ThreadPool& pool, const std::vector<Cache>& layers, const Shape& s,
                      const std::vector<std::vector<int32_t>>& rows, int reps) {
    const Cache& c = layers[0];
    std::vector<float> q(rows.size() * s.n_head * s.head_dim, 0.1f), out(q.size());
    std::vector<const std::vector<int32_t>*> vis;
    for (const auto& r : rows) vis.push_back(&r);
    AttentionArgs a;
    a.n_rows = (int)rows.size();
    a.n_head = s.n_head;
    a.n_head_kv = s.n_head_kv;
    a.head_dim = s.head_dim;
    a.q = q.data();
    a.out = out.data();
    a.scale = 1.0f / std::sqrt((float)s.head_dim);
    a.k_type = a.v_type = c.t;
    a.k = c.k.data();
    a.v = c.v.data();
    a.k_cell_bytes = a.v_cell_bytes = c.cell_bytes;
    a.visible = vis.data();
    // BENCH_CLOCK=cpu: process CPU time instead of wall time, steadier on a loaded machine (use it with
    // BENCH_THREADS=1, where the calling thread does all the work).
    static const bool cpu = getenv("BENCH_CLOCK") && !strcmp(getenv("BENCH_CLOCK"), "cpu");
    auto now = [] {
        timespec ts;
        clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + 1e-9 * ts.tv_nsec;
    };
    const double t0 = now();
    for (int r = 0; r < reps; r++) {
        const Cache& l = layers[r % layers.size()];
        a.k = l.k.data(), a.v = l.v.data();
        attention(pool, a);
    }
    return (now() - t0) / reps;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> depths;
    for (int i = 1; i < argc; i++) depths.push_back(atoi(argv[i]));
    if (depths.empty()) depths = {8192, 32768};
    const int threads = getenv("BENCH_THREADS") ? atoi(getenv("BENCH_THREADS")) : 2;
    const int n_rows = getenv("BENCH_ROWS") ? std::max(1, atoi(getenv("BENCH_ROWS"))) : 1;
    const int n_layers = getenv("BENCH_LAYERS") ? std::max(1, atoi(getenv("BENCH_LAYERS"))) : 1;
    const bool shared = getenv("BENCH_SHARED") && atoi(getenv("BENCH_SHARED"));
    ThreadPool pool(threads);
    std::vector<GgmlType> types = {GgmlType::F16,       GgmlType::Q8_0,   GgmlType::Q4_0,       GgmlType::TURBO3,
                                   GgmlType::TURBO3_64, GgmlType::TURBO4, GgmlType::TURBO2_TCQ, GgmlType::TURBO3_TCQ};
    if (const char* only = getenv("BENCH_TYPES")) {  // e.g. BENCH_TYPES=f16,turbo3 (f16 first: the ratios' base)
        types.clear();
        char buf[256];
        snprintf(buf, sizeof buf, "%s", only);
        for (char* tok = strtok(buf, ","); tok; tok = strtok(nullptr, ",")) {
            GgmlType t;
            if (!ggml_type_from_name(tok, &t)) return fprintf(stderr, "unknown type %s\n", tok), 2;
            types.push_back(t);
        }
    }
    std::vector<Shape> shapes = {{"smollm2 9/3x64", 9, 3, 64}, {"gemma3 4/1x256", 4, 1, 256}};
    if (const char* shape = getenv("BENCH_SHAPE")) shapes.erase(shapes.begin() + (shape[0] == 's' ? 1 : 0));
    constexpr int kRounds = 5;
    printf("| shape | depth | KV type | bytes/token/layer | ms per layer (median of %d) | vs f16 | rows | ns per cell·kv head |\n"
           "|---|---|---|---|---|---|---|---|\n", kRounds);
    for (const Shape& s : shapes)
        for (int depth : depths) {
            std::vector<std::vector<int32_t>> rows(n_rows);
            for (int r = 0; r < n_rows; r++)
                for (int i = 0; i < depth + (shared ? r : 0); i++) rows[r].push_back(shared ? i : i * n_rows + r);
            std::vector<std::vector<Cache>> caches;  // [type][layer]
            for (GgmlType t : types) caches.emplace_back(n_layers, make_cache(t, s, depth * n_rows));
            std::vector<std::vector<double>> ms(caches.size());
            const int reps = std::max(n_layers, 200000 / (depth * n_rows) / n_layers * n_layers);
            for (int round = 0; round < kRounds; round++)
                for (size_t i = 0; i < caches.size(); i++)
                    ms[i].push_back(1e3 * time_attention(pool, caches[i], s, rows, reps));
            double f16 = 0;
            for (size_t i = 0; i < caches.size(); i++) {
                std::sort(ms[i].begin(), ms[i].end());
                const double med = ms[i][kRounds / 2];
                if (i == 0) f16 = med;
                printf("| %s | %d | %s | %zu | %.3f | %.2fx | %d | %.2f |\n", s.name, depth, ggml_type_name(caches[i][0].t),
                       2 * caches[i][0].cell_bytes, med, f16 / med, n_rows, 1e6 * med / ((double)n_rows * depth * s.n_head_kv));
            }
        }
    return 0;
}
