// app/args: a small command-line parser taking llama.cpp-style names (-m, -ub, --top-k, ...), and the
// option groups shared by several subcommands (model/context, sampling).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"
#include "model/engine.h"
#include "sample/sampler.h"

namespace bee {

class ArgParser {
public:
    ArgParser(std::string prog, std::string summary) : prog_(std::move(prog)), summary_(std::move(summary)) {}

    // names: "-m,--model". Values are checked when parsed; a bad value is an Error naming the flag.
    void flag(const char* names, bool* out, const char* help);
    void str(const char* names, std::string* out, const char* meta, const char* help);
    void i32(const char* names, int32_t* out, const char* help, int64_t lo = INT32_MIN, int64_t hi = INT32_MAX);
    void u64(const char* names, uint64_t* out, const char* help);
    void f32(const char* names, float* out, const char* help, float lo = -1e30f, float hi = 1e30f);
    void custom(const char* names, const char* meta, const char* help, std::function<void(const std::string&)> fn);
    // Positional arguments collected in order (parse() fails on extra ones if none registered).
    void positional(std::vector<std::string>* out, const char* meta) { pos_ = out; pos_meta_ = meta; }

    // Returns false if --help was given (usage printed to stdout). Throws Error on bad input.
    bool parse(int argc, char** argv);
    std::string usage() const;

private:
    struct Opt {
        std::vector<std::string> names;
        bool takes_value;
        std::string meta, help;
        std::function<void(const std::string&)> set;
    };
    const Opt* find(const std::string& name) const;
    std::string prog_, summary_;
    std::vector<Opt> opts_;
    std::vector<std::string>* pos_ = nullptr;
    std::string pos_meta_;
};

// -m -c -b -ub -t -ctk -ctv --kv-auto-asymmetric
struct ModelOptions {
    std::string model;
    int32_t n_ctx = 4096;
    int32_t n_batch = 2048;
    int32_t n_ubatch = 512;
    int32_t n_threads = 0;  // 0: all cores
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    bool kv_auto_asymmetric = true;
    bool kv_rotate = true;
    int32_t kv_boundary_layers = kKvBoundaryAuto;  // --kv-boundary-layers (kv/kv_layers.h)
};
void add_model_options(ArgParser& p, ModelOptions& o);
// The Engine settings the model options ask for (n_ubatch is capped by n_batch).
EngineParams engine_params(const ModelOptions& o);
void add_sampling_options(ArgParser& p, SamplingParams& s);
// s with its DRY sequence breakers bound to the model's vocabulary (sample/sampler.h bind_dry_breakers).
SamplingParams with_vocab(SamplingParams s, const Model& m);

}  // namespace bee
