// spec/dflash/dflash_model: a DFlash block-diffusion drafter in either GGUF dialect — llama.cpp's `dflash`
// or the fork's `dflash-draft` (specs/drafters.md §2.2–2.5, §8.2, §8.7) — checked against its target at
// load, its per-sequence context K/V built from the target's tapped hidden states, and its forward on the
// CPU: one block [last token, mask × n] attending non-causally to itself and a window of the context.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "model/weights.h"
#include "spec/drafter_file.h"

namespace bee {

enum class DflashDialect {
    llama_cpp,  // general.architecture = dflash (llama.cpp's converter)
    fork,       // general.architecture = dflash-draft (buun / BeeLlama's converter)
};

struct DflashHParams {
    DflashDialect dialect = DflashDialect::llama_cpp;
    int n_embd = 0;  // H, equal to the target's
    int n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
    float norm_eps = 1e-6f;
    float attn_scale = 0;  // 1/sqrt(head_dim)
    RopeParams rope;       // NEOX (rotate-half), as the converters leave Q/K rows unpermuted
    int block_size = 16;   // B: a block drafts at most B - 1 tokens
    int32_t mask_token = -1;
    // Target layers whose inputs are concatenated into a feature row, in file order, in Bee's capture
    // convention (id k = the input of layer k = the output of layer k - 1). llama.cpp's file stores exactly
    // these (HF ids + 1); the fork's stores HF ids (layer outputs), so its ids are read + 1.
    std::vector<int32_t> target_layers;
    int n_swa = 0;             // sliding window of the layers marked in `swa` (0: none)
    std::vector<uint8_t> swa;  // [n_layer] 1: a sliding-window layer
    float fc_scale = 1.0f;     // fc.scale (llama.cpp dialect), applied to fc's output
    int n_draft_vocab = 0;     // rows of the output head (the target's vocabulary without d2t)
    int n_features() const { return (int)target_layers.size() * n_embd; }
};

struct DflashLayer {
    Weight attn_norm;         // (n_embd) on the block rows only; context rows enter K/V unnormed
    Weight wq, wk, wv;        // (n_head * hd, n_embd), (n_head_kv * hd, n_embd) x2
    Weight wo;                // (n_embd, n_head * hd)
    Weight q_norm, k_norm;    // (hd) per-head RMS norms
    Weight ffn_norm;          // (n_embd): ffn_norm (llama.cpp) or post_attention_norm (fork)
    Weight ffn_gate, ffn_up;  // (n_ff, n_embd)
    Weight ffn_down;          // (n_embd, n_ff)
};

struct DflashWeights {
    Weight fc;           // (n_embd, n_taps * n_embd): fc / dflash_fc
    Weight hidden_norm;  // (n_embd) after fc: enc.output_norm / dflash_hidden_norm
    Weight tok_embd;     // (n_vocab, n_embd): the drafter's own or the target's
    Weight output_norm;  // (n_embd)
    Weight output;       // (n_draft_vocab, n_embd): the drafter's own or the target's
    std::vector<DflashLayer> layers;
};

// One sequence's context in the drafter: per layer, K = rope(k_norm(Wk · fused)) at the target position
// and V = Wv · fused for every context cell, cells in ascending position.
struct DflashContext {
    std::vector<int32_t> pos;              // (cells) ascending target positions
    std::vector<std::vector<float>> k, v;  // [n_layer] (cells, n_head_kv * head_dim)
    int n_cells() const { return (int)pos.size(); }
    void cut(int32_t p);          // drops every cell at position >= p (a rejected draft)
    void drop_before(int32_t p);  // drops every cell at position < p (bounds memory to the window)
    void clear() { cut(INT32_MIN); }
};

// One block to draft: rows [last_token, mask × n_draft] at positions pos … pos + n_draft.
struct DflashBlock {
    const DflashContext* ctx = nullptr;
    int32_t last_token = 0;  // the last committed token (its hidden states are not in ctx yet)
    int32_t pos = 0;         // its position: every cell of ctx must be before it
    int n_draft = 0;         // 1 … block_size - 1
};

class DflashModel {
public:
    static constexpr int kDefaultCrossCtx = 512;  // context cells a block attends to (--spec-dflash-cross-ctx)

    // Maps `path`, reads and checks the hparams and tensors against `target`; throws Error saying what
    // does not fit and how to fix it. `target` must outlive the drafter (its tensors may be shared).
    static std::unique_ptr<DflashModel> load(const std::string& path, const DrafterTarget& target);

    const DflashHParams& hparams() const { return hp_; }
    const DflashWeights& weights() const { return w_; }
    // Draft id -> target id (empty: the drafter scores the target's whole vocabulary).
    const std::vector<int32_t>& d2t() const { return d2t_; }
    int32_t target_id(int32_t draft_id) const { return d2t_.empty() ? draft_id : d2t_[draft_id]; }

    // Appends n context cells: features (n, n_features()) are the target's captured rows (the layers of
    // target_layers, concatenated in that order) at positions pos[n], ascending and after every kept cell.
    // fused = hidden_norm(fc · features · fc_scale); each layer keeps rope(k_norm(Wk · fused)), Wv · fused.
    void add_context(ThreadPool& pool, DflashContext& ctx, const float* features, const int32_t* pos, int n) const;
    // Several contexts' cells in one pass: context c gets counts[c] rows, the rows of features and pos
    // context by context.
    void add_contexts(ThreadPool& pool, DflashContext* const* ctxs, const int* counts, int n_ctx, const float* features,
                      const int32_t* pos) const;

    // Drafts the blocks in one pass. Each block row attends to the last `cross_ctx` cells of its context
    // and to every row of its block (non-causal; sliding-window layers keep only keys less than n_swa
    // positions behind the row). logits: (Σ n_draft, n_draft_vocab), block by block, row i scoring the
    // token at pos + 1 + i. Throws Error on a bad block (token, length, a context not before it).
    void draft(ThreadPool& pool, const DflashBlock* blocks, int n_blocks, int cross_ctx, float* logits) const;

    // full (n_vocab of the target) = draft logits scattered through d2t, -inf elsewhere.
    void scatter_logits(const float* draft, float* full, int n_vocab) const;

private:
    explicit DflashModel(GgufFile f) : file_(std::move(f)) {}
    GgufFile file_;
    DflashHParams hp_;
    DflashWeights w_;
    std::vector<int32_t> d2t_;
    std::vector<AlignedBytes> repacked_;  // owns the drafter's own matrices in the matmul's preferred layout
};

}  // namespace bee
