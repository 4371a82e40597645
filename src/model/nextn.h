// model/nextn: a model's MTP (NextN) block run as a draft head (../shared/specs/drafters.md §4.2, §8.3):
//   x = eh_proj · [RMSNorm(embed(token))·enorm ; RMSNorm(h)·hnorm]   (the embedding first)
//   x = the architecture's own full-attention decoder layer on x, over the head's own K/V
//   h' = RMSNorm(x)·head_norm  (exported: the next step's h),  logits = head · h'
// h is the trunk's final hidden state after output_norm at the previous position (trunk_h), or the head's
// own h' while it drafts a chain. One sequence; the K/V holds the positions decoded and not cut.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"

namespace bee {

class NextnHead {
public:
    // n_ctx K/V cells (f16); runs on `pool` (the target's, lent between its decodes). Throws Error if the
    // model has no MTP block.
    NextnHead(const Model& m, int n_ctx, ThreadPool& pool);

    // Rows token[i] at pos[i] (ascending, above every cached position) with input state h_in (n, n_embd);
    // writes h_out (n, n_embd) and appends the logits (n_vocab each) of the rows whose want_logits[i] is set
    // to `logits`, in row order. Throws Error when the K/V is full.
    void decode(const int32_t* tokens, const int32_t* pos, const float* h_in, int n, const uint8_t* want_logits,
                float* h_out, std::vector<float>& logits);
    // Drops the cached positions >= p.
    void cut(int32_t p) { kv_->seq_rm(0, p, -1); }
    int32_t n_pos() const { return kv_->seq_pos_max(0) + 1; }
    int n_ctx() const { return kv_->n_cells(); }
    // The trunk's h from a captured final hidden state x (before the output norm): RMSNorm(x)·output_norm.
    void trunk_h(const float* x, float* h) const;

private:
    void reserve(int n);

    const Model& m_;
    HParams hp_;      // the block as a one-layer model: full attention, K/V layer 0
    ModelWeights w_;  // layers = {the MTP block}
    Weight embed_, head_, head_norm_;
    ThreadPool& pool_;
    std::unique_ptr<KvCache> kv_;
    ForwardScratch s_;
    int rows_ = 0;                     // scratch sized for this many rows
    std::vector<float> x_, cat_, hw_;  // (rows, n_embd), (rows, 2 n_embd), (rows, n_embd)
    std::vector<std::vector<int32_t>> vis_;
    std::vector<const std::vector<int32_t>*> vis_ptr_;
    std::vector<std::pair<int32_t, int32_t>> cells_;
};

}  // namespace bee
