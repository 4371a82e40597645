// app/args: a small command-line parser taking llama.cpp-style names (-m, -ub, --top-k, ...), and the
// option groups shared by several subcommands (model/context, sampling).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"
#include "model/engine.h"
#include "model/model.h"
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
    // A flag whose value may be followed by a second one: fn(value, next argument or nullptr) returns
    // whether it took the next argument too (llama.cpp's --lora-scaled FILE SCALE).
    void custom_pair(const char* names, const char* meta, const char* help,
                     std::function<bool(const std::string&, const char*)> fn);
    // A flag without a value that runs fn.
    void action(const char* names, const char* help, std::function<void()> fn);
    // llama.cpp flags Bee takes without acting on them (n_values 0 or 1): parse() logs "<flag>: <note>"
    // once per flag after the whole command line is read; usage() lists them on one line.
    void ignored(const char* names, int n_values, const char* note);
    // llama.cpp flags Bee refuses: seeing one is an Error "<flag>: <reason>".
    void refused(const char* names, const char* reason);
    // A flag that prints text to stdout and makes parse() return false, as --help does.
    void exit_with(const char* names, const char* help, std::string text);
    // Positional arguments collected in order (parse() fails on extra ones if none registered).
    void positional(std::vector<std::string>* out, const char* meta) {
        pos_ = out;
        pos_meta_ = meta;
    }

    // Whether `name` ("-c", "--ctx-size") is a flag of this parser, and whether it takes a value.
    bool has(const std::string& name, bool* takes_value) const;

    // Returns false if --help was given (usage printed to stdout). Throws Error on bad input.
    bool parse(int argc, char** argv);
    std::string usage() const;

private:
    enum class Kind { normal, ignored, refused, exit };
    struct Opt {
        std::vector<std::string> names;
        bool takes_value;
        std::string meta, help;
        std::function<void(const std::string&)> set;
        Kind kind = Kind::normal;
        std::function<bool(const std::string&, const char*)> set_pair{};  // custom_pair: replaces `set`
    };
    const Opt* find(const std::string& name) const;
    std::string prog_, summary_;
    std::vector<Opt> opts_;
    std::vector<std::string> notes_;  // ignored flags seen, one line each
    std::string exit_text_;
    bool exit_ = false;
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
    ModelLoadParams load;                          // --override-kv, --rope-*, --check-tensors
    bool mlock = false;                            // --mlock: lock the loaded model in RAM
    OffloadParams offload;                         // -ngl, -dev (app/args_device.h)
    std::vector<LoraSpec> lora;                    // --lora, --lora-scaled (model/lora.h)
    bool lora_init_without_apply = false;          // --lora-init-without-apply: every scale starts at 0
};
// Also registers the log options (-v, -lv, --log-*) and the llama.cpp model/device flags Bee accepts
// or refuses (app/args_compat.h).
void add_model_options(ArgParser& p, ModelOptions& o);
// -v, -lv, --log-disable, --log-file, --log-timestamps: applied as they are parsed.
void add_log_options(ArgParser& p);
// Model::load with the options' load parameters, then --mlock.
std::unique_ptr<Model> load_model(const ModelOptions& o);
// --mlock: locks the process's pages in RAM; a failure (RLIMIT_MEMLOCK) is a warning, as in llama.cpp.
void lock_model_memory();
// The Engine settings the model options ask for (n_ubatch is capped by n_batch).
EngineParams engine_params(const ModelOptions& o);
void add_sampling_options(ArgParser& p, SamplingParams& s);
// "\n", "\t", "\r", "\"" and "\\" in a command-line string become the characters they name.
std::string unescape_arg(const std::string& v);
// s with its DRY sequence breakers bound to the model's vocabulary (sample/sampler.h bind_dry_breakers).
SamplingParams with_vocab(SamplingParams s, const Model& m);

}  // namespace bee
