// model/model: a loaded model — the mapped GGUF, its hparams, weights bound by its architecture, and
// its tokenizer. Immutable after load; several Engines may share one Model.
#pragma once
#include <memory>
#include <string>

#include "gguf/gguf.h"
#include "gguf/gguf_override.h"
#include "model/arch/arch.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace bee {

// What the user changes at load time (llama.cpp's --override-kv, --rope-*, --check-tensors).
struct ModelLoadParams {
    std::vector<GgufOverride> kv_overrides;  // applied to the metadata before anything reads it
    // Rope settings over the file's (0 / empty: the file's). rope_scaling: "none", "linear" or "yarn";
    // rope_freq_scale: positions multiplied by it (scaling by 1 / rope_freq_scale).
    float rope_freq_base = 0;
    float rope_freq_scale = 0;
    std::string rope_scaling;
    // YaRN settings over the file's (llama.cpp's --yarn-*; < 0 / 0: the file's or llama.cpp's default).
    int yarn_orig_ctx = 0;
    float yarn_ext_factor = -1, yarn_attn_factor = -1, yarn_beta_fast = -1, yarn_beta_slow = -1;
    bool check_tensors = false;  // every float of every tensor must be finite (dequantized)
};

class Model {
public:
    // Maps and validates the file, reads hparams, binds every tensor, loads the tokenizer.
    // Throws Error naming the file and the problem (unsupported architecture or type, missing tensor).
    static std::unique_ptr<Model> load(const std::string& path, const ModelLoadParams& lp = {});

    const GgufFile& gguf() const { return file_; }
    const HParams& hparams() const { return hp_; }
    const ModelWeights& weights() const { return w_; }
    const ArchDef& arch() const { return *arch_; }
    const Tokenizer& tokenizer() const { return *tok_; }
    // Bytes of all tensors in the file.
    size_t weight_bytes() const;
    // Short description: "llama 30 layers, 576 embd, 9 heads (3 kv), 134.5 M params, q4_1".
    std::string describe() const;

private:
    explicit Model(GgufFile f) : file_(std::move(f)) {}
    GgufFile file_;
    HParams hp_;
    ModelWeights w_;
    const ArchDef* arch_ = nullptr;
    std::unique_ptr<Tokenizer> tok_;
};

}  // namespace bee
