// tools/matmul_bench: times matmul() of one weight matrix (random values, quantized to TYPE and repacked
// as the model loader does) against 1, 4, 8 and 16 token rows: the matvec of generation, and the steps of
// a server with several slots or a prompt. With COPIES > 1 it cycles through that many copies of the
// matrix, so the weights stream from memory as a model's layers do; COPIES 1 keeps them in cache and
// times the tile kernels' arithmetic. Prints the best of 30 rounds per row count. Not part of the build;
// compile against a build dir:
//
//   g++ -O2 -std=c++20 -I src tools/matmul_bench.cpp -o /tmp/matmul_bench build/libbee_kernels.a
//       build/libbee_quant.a build/libbee_gguf.a build/libbee_base.a -lpthread        (one command line)
//   /tmp/matmul_bench TYPE N_OUT N_IN COPIES THREADS        e.g. /tmp/matmul_bench q4_1 1536 576 64 2
//
// BEE_CPU=avx2 and BEE_AVX_VNNI=0 pick the AVX2 tiles, without AVX-VNNI, on a machine that has more.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/kernels.h"

using namespace bee;

int main(int argc, char** argv) {
    GgmlType t = GgmlType::Q4_1;
    if (argc > 1 && !ggml_type_from_name(argv[1], &t)) {
        fprintf(stderr, "matmul_bench: unknown type '%s' (e.g. q4_1, q8_0, q4_K)\n", argv[1]);
        return 2;
    }
    const int64_t n_out = argc > 2 ? atoll(argv[2]) : 1536, n_in = argc > 3 ? atoll(argv[3]) : 576;
    const int copies = argc > 4 ? atoi(argv[4]) : 64, threads = argc > 5 ? atoi(argv[5]) : 1;
    const QuantTraits* tr = quant_traits(t);
    if (!tr || !tr->quantize_row || n_out <= 0 || n_in <= 0 || copies <= 0 || threads <= 0 ||
        n_in % ggml_type_info(t).block_size != 0) {
        fprintf(stderr, "matmul_bench: no quantizer for %s, a size <= 0, or N_IN not a multiple of its block (%lld)\n",
                ggml_type_name(t), (long long)ggml_type_info(t).block_size);
        return 2;
    }
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> wf((size_t)(n_out * n_in));
    for (float& v : wf) v = nd(rng) * 0.05f;
    std::vector<uint8_t> wq(ggml_row_size(t, n_in) * (size_t)n_out);
    tr->quantize_row(wf.data(), wq.data(), n_out * n_in);
    std::vector<RepackedWeight> ws;
    for (int i = 0; i < copies; i++) ws.push_back(repack_weight(t, wq.data(), n_out, n_in));
    const auto data = [&](int i) -> const void* { return ws[i].data ? ws[i].data.get() : wq.data(); };
    ThreadPool pool(threads);
    for (int ntok : {1, 4, 8, 16}) {
        std::vector<float> x((size_t)(ntok * n_in)), y((size_t)(ntok * n_out));
        for (float& v : x) v = nd(rng);
        double best = 1e9;
        for (int round = 0; round < 30; round++) {
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < copies; i++)
                matmul(pool, t, data(i), n_out, n_in, x.data(), ntok, y.data(), ws[i].layout);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / copies;
            if (s < best) best = s;
        }
        printf("%s %lldx%lld copies %d threads %d ntok %2d: %8.1f us %7.1f GB/s %7.1f GMAC/s\n", ggml_type_name(t),
               (long long)n_out, (long long)n_in, copies, threads, ntok, best * 1e6, (double)wq.size() / best / 1e9,
               (double)n_out * n_in * ntok / best / 1e9);
    }
    return 0;
}
