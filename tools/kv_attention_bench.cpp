// tools/kv_attention_bench: times the attention of one generated token (one query row) over a deep KV
// cache of one layer, per KV type, with the head shapes of SmolLM2-135M (9 q / 3 kv heads x 64) and
// Gemma 3 270M (4 q / 1 kv head x 256). Types are measured in alternating rounds (the machine is
// shared and noisy) and the median per type is printed. The cache holds random rows: the cost of
// attention does not depend on the values. Not part of the build; compile against a build dir:
//
//   g++ -O2 -std=c++20 -I src tools/kv_attention_bench.cpp -o /tmp/kv_attention_bench \
//       build-kvquant/libbee_kernels.a build-kvquant/libbee_quant.a build-kvquant/libbee_gguf.a \
//       build-kvquant/libbee_base.a -lpthread
//   /tmp/kv_attention_bench 8192 32768
//   BENCH_TYPES=f16,turbo3 BENCH_SHAPE=gemma BENCH_THREADS=1 BENCH_CLOCK=cpu /tmp/kv_attention_bench 8192
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

double time_attention(ThreadPool& pool, const Cache& c, const Shape& s, const std::vector<int32_t>& cells, int reps) {
    std::vector<float> q(s.n_head * s.head_dim, 0.1f), out(q.size());
    const std::vector<int32_t>* vis[1] = {&cells};
    AttentionArgs a;
    a.n_rows = 1;
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
    a.visible = vis;
    // BENCH_CLOCK=cpu: process CPU time instead of wall time, steadier on a loaded machine (use it with
    // BENCH_THREADS=1, where the calling thread does all the work).
    static const bool cpu = getenv("BENCH_CLOCK") && !strcmp(getenv("BENCH_CLOCK"), "cpu");
    auto now = [] {
        timespec ts;
        clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + 1e-9 * ts.tv_nsec;
    };
    const double t0 = now();
    for (int r = 0; r < reps; r++) attention(pool, a);
    return (now() - t0) / reps;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> depths;
    for (int i = 1; i < argc; i++) depths.push_back(atoi(argv[i]));
    if (depths.empty()) depths = {8192, 32768};
    const int threads = getenv("BENCH_THREADS") ? atoi(getenv("BENCH_THREADS")) : 2;
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
    printf("| shape | depth | KV type | bytes/token/layer | ms per layer (median of %d) | vs f16 |\n|---|---|---|---|---|---|\n",
           kRounds);
    for (const Shape& s : shapes)
        for (int depth : depths) {
            std::vector<int32_t> cells(depth);
            for (int i = 0; i < depth; i++) cells[i] = i;
            std::vector<Cache> caches;
            for (GgmlType t : types) caches.push_back(make_cache(t, s, depth));
            std::vector<std::vector<double>> ms(caches.size());
            const int reps = std::max(1, 200000 / depth);
            for (int round = 0; round < kRounds; round++)
                for (size_t i = 0; i < caches.size(); i++)
                    ms[i].push_back(1e3 * time_attention(pool, caches[i], s, cells, reps));
            double f16 = 0;
            for (size_t i = 0; i < caches.size(); i++) {
                std::sort(ms[i].begin(), ms[i].end());
                const double med = ms[i][kRounds / 2];
                if (i == 0) f16 = med;
                printf("| %s | %d | %s | %zu | %.3f | %.2fx |\n", s.name, depth, ggml_type_name(caches[i].t),
                       2 * caches[i].cell_bytes, med, f16 / med);
            }
        }
    return 0;
}
