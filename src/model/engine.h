// model/engine: one inference context over a Model — the KV cache, scratch, thread pool — and
// decode(Batch), the single entry point every caller (run, server, drafters) goes through.
#pragma once
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "kv/kv_cache.h"
#include "kv/kv_layers.h"
#include "model/batch.h"
#include "model/forward.h"
#include "model/lora.h"
#include "model/model.h"
#include "model/offload.h"
#include "model/recurrent_state.h"
#include "model/seq_memory.h"

namespace bee {

struct EngineParams {
    int n_ctx = 4096;       // KV cells in total (0: the model's training context)
    int n_ubatch = 512;     // rows per forward pass; longer batches are split
    int n_threads = 0;      // 0: default_thread_count()
    int n_seq_max = 1;      // sequence ids 0..n_seq_max-1
    bool kv_split = false;  // each sequence allocates from its own n_ctx / n_seq_max cells first (server slots)
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    bool kv_auto_asymmetric = true;            // turbo K on a fragile model is kept at q8_0 (kv_protect_k_type)
    bool kv_rotate = true;                     // legacy block KV types stored Hadamard-rotated (KvCacheParams::rotate)
    int kv_boundary_layers = kKvBoundaryAuto;  // layers whose turbo V is kept at q8_0 (kv/kv_layers.h)
    // How sequences may be cut (model/seq_memory.h). CutPolicy::checkpoints on an attention-only model
    // exercises the fall-backs recurrent layers will need.
    CutPolicy cut_policy = CutPolicy::any;
    // Models with recurrent layers (qwen35): a sequence can be cut exactly at the positions of the last
    // this many rows of its last batch of two rows or more (model/recurrent_state.h). Speculation needs the
    // draft depth + 1; the memory is taken per sequence when first used.
    int recurrent_keep = 65;
    // --ctx-checkpoints / --checkpoint-every-n-tokens: copies of a recurrent sequence's state kept at earlier
    // positions, at most this many per sequence (0: none), and one by itself every this many positions
    // (<= 0: only those the server asks for, near each prompt's end). Attention-only models need none.
    int ctx_checkpoints = 32;
    int checkpoint_every_n = 8192;
    // -ngl / --device / -ot / -nkvo: layers and the output head on a Vulkan device (model/offload.h
    // OffloadPlan). Without a device (or a Vulkan build) every layer runs on the CPU, with a warning.
    OffloadParams offload;
    // --lora / --lora-scaled: LoRA adapters loaded against the model (model/lora.h), applied on the CPU
    // (with any adapter, -ngl is ignored). Every sequence starts with their scales, or with 0 when
    // lora_init_without_apply; SeqMemory::set_lora changes a sequence's.
    std::vector<LoraSpec> lora;
    bool lora_init_without_apply = false;
};

class Engine {
public:
    // Throws Error on invalid parameters (context larger than the model supports is allowed, with a warning).
    Engine(const Model& model, const EngineParams& params);

    // Runs the batch: writes its K/V into the cache and returns the logits of rows that asked (and the
    // hidden states it asked to capture). Throws Error (and leaves the cache as it was) on an invalid
    // batch or when the cache is full.
    void decode(const Batch& batch, DecodeOutput& out);

    // Keeps positions [0, p) of `seq`: a cut where the memory allows one, else a cut at the nearest cut
    // point and a re-decode of the tokens from there (tokens[i] is the token at position p_tokens0 + i,
    // covering [p_tokens0, p)). Returns how many tokens were decoded again. Throws Error if the cut point
    // is below p_tokens0 (the caller did not pass enough tokens).
    int rewind(int seq, int32_t p, int32_t p_tokens0, const std::vector<int32_t>& tokens);

    const Model& model() const { return model_; }
    const EngineParams& params() const { return params_; }
    // The only way to change what a sequence has cached (model/seq_memory.h).
    SeqMemory& memory() { return *mem_; }
    const KvCache& kv() const { return *kv_; }
    ThreadPool& pool() { return *pool_; }
    // The LoRA adapters, in the order given, and the scales every sequence starts with (one per adapter).
    const std::vector<std::unique_ptr<LoraAdapter>>& lora_adapters() const { return lora_; }
    const std::vector<float>& lora_default() const { return lora_default_; }
    // The device part of the forward pass, or nullptr when every layer runs on the CPU.
    const Offload* offload() const { return offload_.get(); }

private:
    void check_kv_types(const HParams& hp);
    void validate(const Batch& b) const;
    void validate_recurrent(const Batch& b) const;
    void apply_shifts();
    void build_visible(const Batch& b, int r0, int n, const int32_t* cells);
    void forward_ubatch(const Batch& b, int r0, int n, const int32_t* cells, DecodeOutput& out);
    void forward_device(const Batch& b, int r0, int n, ForwardCtx& c, int l0, int l1, DecodeOutput& out);
    void capture_rows(const Batch& b, int r0, int n, int il, DecodeOutput& out);
    void load_lora();
    void start_offload();
    LoraBatch* lora_rows(const Batch& b, int r0, int n);
    LoraBatch* lora_head_rows(const std::vector<int32_t>& want);

    const Model& model_;
    EngineParams params_;
    std::unique_ptr<ThreadPool> pool_;
    std::unique_ptr<KvCache> kv_;
    std::unique_ptr<RecurrentState> rs_;  // recurrent layers' state, or none
    std::unique_ptr<SeqMemory> mem_;
    std::unique_ptr<Offload> offload_;  // the layers offload_->on_device() and maybe the head on a device, or none
    ForwardScratch scratch_;
    std::vector<float> x_;                                  // (n_ubatch, n_embd)
    std::vector<float> hidden_;                             // (n_out, n_embd) final-normed rows for the head
    std::vector<std::vector<int32_t>> vis_full_, vis_swa_;  // per ubatch row
    std::vector<const std::vector<int32_t>*> vis_full_ptr_, vis_swa_ptr_;
    std::vector<std::pair<int32_t, int32_t>> seq_cells_;
    std::vector<std::unique_ptr<LoraAdapter>> lora_;
    std::vector<float> lora_default_;
    LoraBatch lora_batch_, lora_head_;  // the current ubatch's adapter rows, and those of its logits rows
};

}  // namespace bee
