// model/lora: LoRA adapters in llama.cpp's adapter GGUF (general.type "adapter", adapter.type "lora",
// adapter.lora.alpha, tensors "<base tensor>.lora_a" / ".lora_b"), loaded against one model, and their
// application in the forward pass: y = W x + s · B (A x) for each adapted weight, where
// s = scale · alpha / rank (alpha != 0) or scale (alpha == 0), as llama.cpp computes it.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/gguf.h"
#include "model/weights.h"

namespace bee {

class Model;

// The weights an adapter may adapt: the attention and FFN projections of each layer, and the output head.
enum class LoraTarget : uint8_t { q, k, v, o, gate, up, down };
constexpr int kLoraTargets = 7;

// One adapted weight W (n_out, n_in): A (rank, n_in) and B (n_out, rank) as F32, F16 or BF16 rows (GGUF's
// lora_a ne = [n_in, rank], lora_b ne = [rank, n_out]), and alpha / rank (1 when alpha is 0).
struct LoraPair {
    Weight a, b;
    float scale_mul = 1.0f;
    explicit operator bool() const { return (bool)a; }
};

class LoraAdapter {
public:
    // Reads and checks the adapter against `model`: general.type, adapter.type, general.architecture,
    // every tensor pairing with a weight the model has, of the right shape. Throws Error naming the
    // file, the tensor and how to fix it. F32, F16 and BF16 tensors are read in place (the file stays
    // mapped); other types with a row decoder (q8_0, ...) are converted to F32.
    static std::unique_ptr<LoraAdapter> load(const std::string& path, const Model& model);

    const std::string& path() const { return path_; }
    float alpha() const { return alpha_; }
    const std::string& task_name() const { return task_name_; }          // adapter.lora.task_name, or ""
    const std::string& prompt_prefix() const { return prompt_prefix_; }  // adapter.lora.prompt_prefix, or ""
    int n_pairs() const { return n_pairs_; }
    // The pair adapting layer il's target, or nullptr.
    const LoraPair* layer(int il, LoraTarget t) const {
        const LoraPair& p = layers_[(size_t)il][(size_t)t];
        return p ? &p : nullptr;
    }
    const LoraPair* output() const { return output_ ? &output_ : nullptr; }

private:
    std::string path_, task_name_, prompt_prefix_;
    float alpha_ = 0;
    int n_pairs_ = 0;
    std::vector<std::array<LoraPair, kLoraTargets>> layers_;  // per layer
    LoraPair output_;
    std::unique_ptr<GgufFile> file_;        // mapped: F32 / F16 / BF16 pairs point into it
    std::vector<std::vector<float>> data_;  // pairs of other types, converted to F32
    friend struct LoraLoader;
};

// A --lora / --lora-scaled argument: the file and its scale.
struct LoraSpec {
    std::string path;
    float scale = 1.0f;
};

// One ubatch's use of the adapters: for each adapter whose scale is nonzero on some row, those rows
// (indices into the ubatch, ascending) and each one's scale. No uses: nothing is computed.
struct LoraUse {
    const LoraAdapter* adapter = nullptr;
    std::vector<int32_t> rows;
    std::vector<float> scale;
};
struct LoraBatch {
    std::vector<LoraUse> uses;
    int n_rows = 0;  // rows of the ubatch (the in / out buffers' row count)
    // Scratch, grown on demand: gathered inputs, A·x, B·(A·x).
    std::vector<float> in, mid, delta;
};

// out (n_rows, n_out) += s_r · B (A in_r) for every use with a pair for (il, t) (il < 0: the output head),
// on each row of that use. in is (n_rows, n_in). Rows are gathered when a use covers only some of them,
// and every product is computed row by row by matmul, so a row's result does not depend on the others.
void lora_apply(ThreadPool& pool, LoraBatch& lb, int il, LoraTarget t, const float* in, float* out);

}  // namespace bee
