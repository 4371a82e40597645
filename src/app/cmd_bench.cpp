// app/cmd_bench: `bee bench` — llama-bench style throughput tests: pp (prompt processing on an empty
// cache) and tg (one token at a time after an optional untimed prefill of depth tokens), per model and
// thread count; and `--bandwidth`, the machine's read bandwidth.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "app/args.h"
#include "app/args_compat.h"
#include "app/args_device.h"
#include "app/bench.h"
#include "app/bench_spec.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "base/timer.h"
#include "model/engine.h"

namespace bee {

namespace {

constexpr uint32_t kTokenSeed = 1234;  // synthetic prompt / generated token ids

struct BenchOptions {
    std::vector<std::string> models;
    std::vector<int> n_prompt{512}, n_gen{128}, n_depth{0}, n_threads;
    int32_t reps = 5;
    int32_t n_batch = 2048, n_ubatch = 512;
    GgmlType type_k = GgmlType::F16, type_v = GgmlType::F16;
    bool kv_auto_asymmetric = true;
    bool kv_rotate = true;
    int kv_boundary_layers = kKvBoundaryAuto;
    std::string output = "md";
    bool bandwidth = false;
    int32_t bandwidth_mb = 1024;
    OffloadParams offload;  // -ngl, -dev
};

// "128,512" -> {128, 512}; each value in [lo, hi].
std::vector<int> parse_int_list(const std::string& v, const char* flag, int lo, int hi) {
    std::vector<int> out;
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        const long x = strtol(item.c_str(), &end, 10);
        if (item.empty() || *end)
            fail("invalid value '%s' for %s: expected integers separated by ','", v.c_str(), flag);
        if (x < lo || x > hi) fail("invalid value %ld for %s: must be in [%d, %d]", x, flag, lo, hi);
        out.push_back((int)x);
    }
    if (out.empty()) fail("invalid value '%s' for %s: expected integers separated by ','", v.c_str(), flag);
    return out;
}

void add_bench_options(ArgParser& p, BenchOptions& o) {
    p.custom("-m,--model", "FILE", "model GGUF file (repeat for several)",
             [&o](const std::string& v) { o.models.push_back(v); });
    p.custom("-p,--n-prompt", "N[,N...]", "prompt tokens per pp test (0: none) [512]",
             [&o](const std::string& v) { o.n_prompt = parse_int_list(v, "-p/--n-prompt", 0, 1 << 20); });
    p.custom("-n,--n-gen", "N[,N...]", "generated tokens per tg test (0: none) [128]",
             [&o](const std::string& v) { o.n_gen = parse_int_list(v, "-n/--n-gen", 0, 1 << 20); });
    p.custom("-d,--n-depth", "N[,N...]",
             "tokens in the cache before a tg test (untimed; 512 decoded, the rest copies of their K/V) [0]",
             [&o](const std::string& v) { o.n_depth = parse_int_list(v, "-d/--n-depth", 0, 1 << 20); });
    p.custom("-t,--threads", "N[,N...]", "threads (0: all cores) [0]",
             [&o](const std::string& v) { o.n_threads = parse_int_list(v, "-t/--threads", 0, 4096); });
    p.i32("-r,--repetitions", &o.reps, "timed repetitions per test [5]", 1, 1000);
    add_device_options(p, o.offload, false);
    p.i32("-b,--batch-size", &o.n_batch, "logical batch size for prompt processing [2048]", 1, 1 << 20);
    p.i32("-ub,--ubatch-size", &o.n_ubatch, "physical batch size (rows per forward pass) [512]", 1, 1 << 20);
    p.custom("-ctk,--cache-type-k", "TYPE", (std::string("KV cache type for K: ") + kv_type_names() + " [f16]").c_str(),
             [&o](const std::string& v) { o.type_k = kv_type_from_name(v, "-ctk/--cache-type-k"); });
    p.custom("-ctv,--cache-type-v", "TYPE", (std::string("KV cache type for V: ") + kv_type_names() + " [f16]").c_str(),
             [&o](const std::string& v) { o.type_v = kv_type_from_name(v, "-ctv/--cache-type-v"); });
    p.custom("--kv-auto-asymmetric", "on|off", "keep turbo K at q8_0 on fragile models (GQA >= 6, small) [on]",
             [&o](const std::string& v) {
                 if (v != "on" && v != "off")
                     fail("invalid value '%s' for --kv-auto-asymmetric: expected on or off", v.c_str());
                 o.kv_auto_asymmetric = v == "on";
             });
    p.custom("--kv-rotate", "on|off", "store q8_0/q4_0/q4_1/q5_0/q5_1 KV Hadamard-rotated [on]",
             [&o](const std::string& v) {
                 if (v != "on" && v != "off") fail("invalid value '%s' for --kv-rotate: expected on or off", v.c_str());
                 o.kv_rotate = v == "on";
             });
    p.custom("--kv-boundary-layers", "N|auto|0",
             "keep turbo V at q8_0 on the first and last N layers (auto: 2 on 16+ layers) [auto]",
             [&o](const std::string& v) { o.kv_boundary_layers = kv_boundary_from_name(v, "--kv-boundary-layers"); });
    p.custom("-o,--output", "FMT", "output format: md, csv, json [md]", [&o](const std::string& v) {
        if (v != "md" && v != "csv" && v != "json")
            fail("invalid value '%s' for -o/--output: expected md, csv or json", v.c_str());
        o.output = v;
    });
    p.flag("--bandwidth", &o.bandwidth, "measure memory read bandwidth instead (1 thread and -t threads)");
    p.i32("--bandwidth-mb", &o.bandwidth_mb, "buffer size for --bandwidth in MiB [1024]", 1, 1 << 20);
}

// llama.cpp's LLAMA_FTYPE names for general.file_type.
const char* file_type_name(int64_t ft) {
    switch (ft) {
        case 0: return "F32";
        case 1: return "F16";
        case 2: return "Q4_0";
        case 3: return "Q4_1";
        case 7: return "Q8_0";
        case 8: return "Q5_0";
        case 9: return "Q5_1";
        case 10: return "Q2_K";
        case 11: return "Q3_K_S";
        case 12: return "Q3_K_M";
        case 13: return "Q3_K_L";
        case 14: return "Q4_K_S";
        case 15: return "Q4_K_M";
        case 16: return "Q5_K_S";
        case 17: return "Q5_K_M";
        case 18: return "Q6_K";
        case 32: return "BF16";
        default: return "?";
    }
}

BenchModelInfo model_info(const Model& m) {
    BenchModelInfo info;
    info.filename = m.gguf().path();
    info.size = m.weight_bytes();
    for (const GgufTensor& t : m.gguf().tensors()) info.n_params += (uint64_t)t.n_elements();
    const std::string n =
        info.n_params >= 1000000000ull ? strfmt("%.1fB", info.n_params / 1e9) : strfmt("%.0fM", info.n_params / 1e6);
    info.type = m.hparams().arch + " " + n + " " + file_type_name(m.gguf().get_int("general.file_type", -1));
    return info;
}

// Bytes a single-token decode reads at average depth `depth_avg`: every weight (the token embedding
// only as one row, unless it doubles as the output head; not the MTP blocks stored after the trunk) plus
// the K and V rows each attention layer attends to (sliding-window layers at most n_swa of them) and the
// recurrent layers' state.
double bytes_per_token(Engine& eng, double depth_avg) {
    const Model& m = eng.model();
    const ModelWeights& w = m.weights();
    const HParams& hp = m.hparams();
    double bytes = (double)m.weight_bytes();
    if (m.gguf().find_tensor("output.weight"))  // not tied (a tied head may still be a repacked copy)
        bytes -= (double)ggml_row_size(w.tok_embd.type, w.tok_embd.ne0) * (double)(w.tok_embd.ne1 - 1);
    for (const GgufTensor& t : m.gguf().tensors())  // blk.N.* with N >= n_layer: MTP blocks, not run
        if (t.name.rfind("blk.", 0) == 0 && std::atoi(t.name.c_str() + 4) >= hp.n_layer) bytes -= (double)t.nbytes;
    if (const RecurrentState* rs = eng.memory().recurrent()) bytes += (double)rs->state_bytes();
    for (int il = 0; il < hp.n_layer; il++) {
        const int kl = hp.layers[il].kv_layer;
        if (kl < 0) continue;
        const double row = (double)(eng.kv().k_row_bytes() + eng.kv().v_row_bytes(kl));
        const bool swa = hp.n_swa > 0 && il < (int)hp.layers.size() && hp.layers[il].swa;
        bytes += row * (swa ? std::min(depth_avg, (double)hp.n_swa) : depth_avg);
    }
    return bytes;
}

// Decodes `n` random tokens at positions [pos0, pos0 + n) in batches of n_batch; logits of the last only.
void decode_random(Engine& eng, std::mt19937& rng, int pos0, int n, int n_batch) {
    std::uniform_int_distribution<int32_t> tok(0, eng.model().hparams().n_vocab - 1);
    Batch b;
    DecodeOutput out;
    for (int i = 0; i < n; i += n_batch) {
        b.clear();
        const int end = std::min(n, i + n_batch);
        for (int j = i; j < end; j++) b.add(tok(rng), pos0 + j, 0, j + 1 == n);
        eng.decode(b, out);
    }
}

// Fills sequence 0 with `depth` cells before a tg test. note: decoding 8K-32K tokens takes many minutes
// on 2 cores, so only the first min(depth, kDepthDecoded) tokens are decoded; the remaining cells copy
// those cells' K/V rows (stored bytes, any KV type) at the following positions. The timed generation
// then reads a full cache of the configured type, and attention cost does not depend on the values.
constexpr int kDepthDecoded = 512;
void fill_depth(Engine& eng, std::mt19937& rng, int depth, int n_batch) {
    const int real = std::min(depth, kDepthDecoded);
    decode_random(eng, rng, 0, real, n_batch);
    if (depth == real) return;
    if (!eng.memory().fill_repeating(0, depth - real))
        fail("bench: the cache has no room for a depth of %d tokens", depth);
}

// One run of a test on an empty cache; returns the timed nanoseconds. tg feeds random tokens, as
// llama-bench does, one per decode.
uint64_t run_once(Engine& eng, const BenchResult& t) {
    std::mt19937 rng(kTokenSeed);
    eng.memory().clear_all();
    if (t.n_gen == 0) {
        const int64_t t0 = time_us();
        decode_random(eng, rng, 0, t.n_prompt, t.n_batch);
        return (uint64_t)(time_us() - t0) * 1000;
    }
    fill_depth(eng, rng, t.n_depth, t.n_batch);
    const int64_t t0 = time_us();
    for (int i = 0; i < t.n_gen; i++) decode_random(eng, rng, t.n_depth + i, 1, 1);
    return (uint64_t)(time_us() - t0) * 1000;
}

// The tests for one model and thread count: pp for each -p, then tg for each -n x -d.
std::vector<BenchResult> plan_tests(const BenchOptions& o, const BenchResult& base) {
    std::vector<BenchResult> tests;
    for (int p : o.n_prompt) {
        if (p == 0) continue;
        BenchResult t = base;
        t.n_prompt = p;
        tests.push_back(t);
    }
    for (int n : o.n_gen)
        for (int d : o.n_depth) {
            if (n == 0) continue;
            BenchResult t = base;
            t.n_gen = n;
            t.n_depth = d;
            tests.push_back(t);
        }
    return tests;
}

void bench_model(const BenchOptions& o, const std::string& path, std::vector<BenchResult>& results) {
    std::unique_ptr<Model> model = Model::load(path);
    BenchResult base;
    base.model = model_info(*model);
    base.n_batch = o.n_batch;
    base.n_ubatch = std::min(o.n_ubatch, o.n_batch);
    base.type_k = o.type_k;
    base.type_v = o.type_v;
    std::vector<BenchResult> tests = plan_tests(o, base);
    int n_ctx = 1;
    for (const BenchResult& t : tests) n_ctx = std::max(n_ctx, t.n_prompt + t.n_depth + t.n_gen);
    for (int nt : o.n_threads) {
        EngineParams ep;
        ep.n_ctx = n_ctx;
        ep.n_ubatch = base.n_ubatch;
        ep.n_threads = nt;
        ep.type_k = o.type_k;
        ep.type_v = o.type_v;
        ep.kv_auto_asymmetric = o.kv_auto_asymmetric;
        ep.kv_rotate = o.kv_rotate;
        ep.kv_boundary_layers = o.kv_boundary_layers;
        ep.offload = o.offload;
        Engine eng(*model, ep);
        for (BenchResult t : tests) {
            t.n_threads = eng.params().n_threads;
            if (eng.offload()) t.backend = "Vulkan";
            t.type_k = eng.params().type_k;  // K protection may have kept K at q8_0
            BEE_LOG_INFO("bench: %s, %d threads, %s", t.model.type.c_str(), t.n_threads, t.test_name().c_str());
            run_once(eng, t);  // warm-up
            for (int r = 0; r < o.reps; r++) t.samples_ns.push_back(run_once(eng, t));
            if (t.n_gen > 0) t.bytes_per_token = bytes_per_token(eng, t.n_depth + (t.n_gen + 1) / 2.0);
            results.push_back(std::move(t));
        }
    }
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    if (argc > 0 && std::string(argv[0]) == "spec") return cmd_bench_spec(argc - 1, argv + 1);  // bee bench spec
    BenchOptions o;
    ArgParser p("bee bench", "Measure prompt-processing and generation speed (llama-bench style), or read bandwidth.");
    add_bench_options(p, o);
    add_log_options(p);
    add_compat_options(p, kCompatBench);
    try {
        if (!p.parse(argc, argv)) return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    try {
        if (o.n_threads.empty()) o.n_threads = {0};
        if (o.bandwidth) {
            const int nt = o.n_threads[0] > 0 ? o.n_threads[0] : default_thread_count();
            bench_bandwidth(stdout, (size_t)o.bandwidth_mb, nt);
            return 0;
        }
        if (o.models.empty()) fail("no model given (use -m FILE)");
        if (plan_tests(o, BenchResult{}).empty()) fail("no tests: every -p and -n value is 0");
        if (log_level() < LogLevel::warn) log_set_level(LogLevel::warn);
        std::vector<BenchResult> results;
        for (const std::string& m : o.models) bench_model(o, m, results);
        if (o.output == "json") bench_print_json(stdout, results);
        else if (o.output == "csv") bench_print_csv(stdout, results);
        else bench_print_md(stdout, results);
        return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace bee
