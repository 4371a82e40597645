// app/bench: what `bee bench` measures (one result per model x test), its report writers
// (md/csv/json, llama-bench field names) and the memory-bandwidth probe.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"

namespace bee {

struct BenchModelInfo {
    std::string filename;
    std::string type;   // "llama 135M Q4_1": arch, parameter count, file type
    uint64_t size = 0;  // bytes of all tensors
    uint64_t n_params = 0;
};

// One test (pp or tg) on one model: its settings and the timed repetitions.
struct BenchResult {
    BenchModelInfo model;
    int n_threads = 0, n_batch = 0, n_ubatch = 0;
    std::string backend = "CPU";  // "Vulkan" with -ngl on a device (layers, head or both)
    GgmlType type_k = GgmlType::F16, type_v = GgmlType::F16;
    int n_prompt = 0, n_gen = 0, n_depth = 0;
    std::vector<uint64_t> samples_ns;  // one per timed repetition
    double bytes_per_token = 0;        // tg only: weights + KV read per generated token

    int n_tokens() const { return n_prompt + n_gen; }
    std::vector<double> samples_ts() const;
    double avg_ns() const;
    double stddev_ns() const;
    double avg_ts() const;
    double stddev_ts() const;
    double gbps() const { return bytes_per_token * avg_ts() / 1e9; }
    std::string test_name() const;  // "pp512", "tg128", "tg128 @ d512"
};

void bench_print_md(FILE* out, const std::vector<BenchResult>& rs);
void bench_print_csv(FILE* out, const std::vector<BenchResult>& rs);
void bench_print_json(FILE* out, const std::vector<BenchResult>& rs);

// Reads a buffer of `mb` MiB with 1 and with n_threads threads, best of 5 each; prints GB/s to out.
void bench_bandwidth(FILE* out, size_t mb, int n_threads);

}  // namespace bee
