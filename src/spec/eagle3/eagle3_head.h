// spec/eagle3/eagle3_head: an EAGLE-3 draft head in llama.cpp's `eagle3` GGUF layout (specs/drafters.md
// §3.3, §8.1), checked against its target at load, and its forward on the CPU over a per-sequence KV.
#pragma once
#include <array>
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

struct Eagle3HParams {
    int n_embd = 0;  // H, the head's width
    int n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
    float norm_eps = 1e-5f;
    float attn_scale = 0;                    // 1/sqrt(head_dim)
    RopeParams rope;                         // llama's adjacent-pair rope (RopeMode::normal)
    int target_n_embd = 0;                   // H_t (eagle3.target_hidden_size)
    std::array<int32_t, 3> target_layers{};  // target layer ids whose inputs are concatenated, in order
    bool norm_before_residual = false;       // the attention residual adds norm(g) instead of g
    bool norm_before_fc = false;             // enc.output_norm over the 3·H_t features before fc
    int n_draft_vocab = 0;                   // rows of the output head (the target's vocabulary without d2t)
};

struct Eagle3Weights {
    Weight fc;                // (n_embd, 3 * target_n_embd)
    Weight enc_norm;          // (3 * target_n_embd), only with norm_before_fc
    Weight tok_embd;          // (n_vocab, n_embd): the head's own or the target's
    Weight attn_norm;         // (n_embd) on the token embedding
    Weight hidden_norm;       // (n_embd) on g (blk.0.attn_norm_2)
    Weight wq, wk, wv;        // (n_head * hd, 2 * n_embd), (n_head_kv * hd, 2 * n_embd) x2
    Weight wo;                // (n_embd, n_head * hd)
    Weight ffn_norm;          // (n_embd)
    Weight ffn_gate, ffn_up;  // (n_ff, n_embd)
    Weight ffn_down;          // (n_embd, n_ff)
    Weight output_norm;       // (n_embd)
    Weight output;            // (n_draft_vocab, n_embd): the head's own or the target's
    Weight rope_freqs;        // optional (n_rot / 2)
};

// One sequence's state in the head: its KV rows, appended in ascending position, and scratch.
struct Eagle3Kv {
    std::vector<float> k, v;   // (cells, n_head_kv * head_dim)
    std::vector<int32_t> pos;  // (cells) ascending
    int n_cells() const { return (int)pos.size(); }
    // Drops every cell at position >= p.
    void cut(int32_t p);
    void clear() { cut(INT32_MIN); }
};

// Rows for Eagle3Head::decode: row i is token[i] at pos[i] with hidden input g[i] (the fc output of the
// target's features one position earlier, or the head's own previous output when drafting deeper).
struct Eagle3Rows {
    int n = 0;
    const int32_t* token = nullptr;  // [n] target token ids
    const int32_t* pos = nullptr;    // [n] ascending, after every cell the KV keeps
    const float* g = nullptr;        // (n, n_embd)
    // [n] each row's sequence: an index into decode's KV array (nullptr: all 0). A sequence's rows are
    // contiguous; several sequences share the matmuls, each attends to its own KV.
    const int32_t* seq = nullptr;
};

class Eagle3Head {
public:
    // Maps `path`, reads and checks the hparams and tensors against `target`; throws Error saying what
    // does not fit and how to fix it. `target` must outlive the head (its tensors may be shared).
    static std::unique_ptr<Eagle3Head> load(const std::string& path, const DrafterTarget& target);

    const Eagle3HParams& hparams() const { return hp_; }
    const Eagle3Weights& weights() const { return w_; }
    // Draft id -> target id (empty: the head scores the target's whole vocabulary).
    const std::vector<int32_t>& d2t() const { return d2t_; }
    int32_t target_id(int32_t draft_id) const { return d2t_.empty() ? draft_id : d2t_[draft_id]; }

    // g (n, n_embd) = fc(features (n, 3 * target_n_embd)), through enc.output_norm when the head has it.
    void encode(ThreadPool& pool, const float* features, int n, float* g) const;
    // One block over the rows: each row attends to the KV cells at or below its position (this batch's
    // included, written first). hidden (n, n_embd): the block's output before the output norm, which
    // feeds the next depth (must not alias rows.g); logits (n, n_draft_vocab) if not nullptr. Throws Error on
    // a token out of range or a position not after every kept cell.
    void decode(ThreadPool& pool, Eagle3Kv* const* kvs, int n_kv, const Eagle3Rows& rows, float* hidden,
                float* logits) const;
    void decode(ThreadPool& pool, Eagle3Kv& kv, const Eagle3Rows& rows, float* hidden, float* logits) const {
        Eagle3Kv* p = &kv;
        decode(pool, &p, 1, rows, hidden, logits);
    }
    // logits (n, n_draft_vocab) of the block outputs `hidden` (n, n_embd): the output norm, then the head.
    void logits(ThreadPool& pool, const float* hidden, int n, float* out) const;
    // full (n_vocab of the target) = draft logits scattered through d2t, -inf elsewhere.
    void scatter_logits(const float* draft, float* full, int n_vocab) const;

private:
    explicit Eagle3Head(GgufFile f) : file_(std::move(f)) {}
    GgufFile file_;
    Eagle3HParams hp_;
    Eagle3Weights w_;
    std::vector<int32_t> d2t_;
    std::vector<AlignedBytes> repacked_;  // owns the head's own matrices in the matmul's preferred layout
};

}  // namespace bee
