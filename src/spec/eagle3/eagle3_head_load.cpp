// spec/eagle3/eagle3_head_load: Eagle3Head::load — the `eagle3` GGUF keys and tensors as llama.cpp
// writes them (specs/drafters.md §8.1), bound with model/'s helpers and checked against the target.
#include <cstring>

#include "base/error.h"
#include "model/forward.h"
#include "model/model.h"
#include "spec/eagle3/eagle3_head.h"

namespace bee {

static constexpr DrafterFileKind kHeadFile = {"head", "eagle3",
                                              "; convert the head again with a current convert_hf_to_gguf.py",
                                              "another vocabulary, or from HF offsets without adding the index"};

static void read_hparams(const GgufFile& f, const DrafterTarget& t, Eagle3HParams& hp) {
    const char* path = f.path().c_str();
    HParams common;
    common.arch = "eagle3";
    load_common_hparams(f, common);
    if (common.n_layer != 1)
        fail("%s: eagle3.block_count is %d: an EAGLE-3 head has exactly one decoder block", path, common.n_layer);
    if (common.head_dim_v != common.head_dim)
        fail("%s: value length %d differs from key length %d: not an EAGLE-3 head llama.cpp writes", path,
             common.head_dim_v, common.head_dim);
    hp.n_embd = common.n_embd;
    hp.n_head = common.n_head;
    hp.n_head_kv = common.n_head_kv;
    hp.head_dim = common.head_dim;
    hp.n_ff = common.n_ff;
    hp.norm_eps = common.norm_eps;
    hp.attn_scale = common.attn_scale;
    hp.rope = common.layers[0].rope;
    hp.rope.mode = RopeMode::normal;  // llama-style: the converter permuted Q/K rows for it
    hp.target_n_embd = (int)f.get_int("eagle3.target_hidden_size", hp.n_embd);
    if (hp.target_n_embd != t.n_embd)
        fail(
            "%s: eagle3.target_hidden_size is %d but the target %s has hidden size %d: this head was made for "
            "another model; use the head trained for this target",
            path, hp.target_n_embd, t.name.c_str(), t.n_embd);
    if (!f.has("eagle3.target_layers"))
        fail(
            "%s: eagle3.target_layers is missing%s: convert the head again with a current llama.cpp "
            "convert_hf_to_gguf.py",
            path, f.has("eagle3.extract_layers") ? " (the file has the older eagle3.extract_layers)" : "");
    const std::vector<int64_t> ids = f.get_int_array("eagle3.target_layers");
    if (ids.size() != 3)
        fail("%s: eagle3.target_layers has %zu ids: EAGLE-3 reads exactly 3 target layers", path, ids.size());
    for (int j = 0; j < 3; j++) {
        if (ids[j] < 0 || ids[j] > t.n_layer)
            fail(
                "%s: eagle3.target_layers = [%lld, %lld, %lld] but the target %s has %d layers (ids 0..%d): this "
                "head was made for another model; use the head trained for this target",
                path, (long long)ids[0], (long long)ids[1], (long long)ids[2], t.name.c_str(), t.n_layer, t.n_layer);
        hp.target_layers[j] = (int32_t)ids[j];
    }
    hp.norm_before_residual = f.get_bool("eagle3.norm_before_residual", false);
    hp.norm_before_fc = f.get_bool("eagle3.norm_before_fc", false);
    const int64_t vocab = f.get_int("eagle3.vocab_size", t.n_vocab);
    if (vocab != t.n_vocab)
        fail(
            "%s: eagle3.vocab_size is %lld but the target %s has %d tokens: the head was converted against "
            "another tokenizer; convert it with --target-model-dir pointing at this model",
            path, (long long)vocab, t.name.c_str(), t.n_vocab);
}

static void bind_weights(const GgufFile& f, const DrafterTarget& t, Eagle3HParams& hp, Eagle3Weights& w,
                         const std::vector<int32_t>& d2t) {
    const int64_t e = hp.n_embd, e2 = 2 * e, f3 = 3 * (int64_t)hp.target_n_embd;
    const int64_t nq = (int64_t)hp.n_head * hp.head_dim, nk = (int64_t)hp.n_head_kv * hp.head_dim;
    hp.n_draft_vocab = d2t.empty() ? t.n_vocab : (int)d2t.size();
    w.fc = bind_weight(f, "fc.weight", f3, e);
    if (hp.norm_before_fc) w.enc_norm = bind_weight(f, "enc.output_norm.weight", f3, 1);
    w.tok_embd = own_or_target(f, "token_embd.weight", e, t.n_vocab, t.tok_embd, t, kHeadFile);
    w.attn_norm = bind_weight(f, "blk.0.attn_norm.weight", e, 1);
    w.hidden_norm = bind_weight(f, "blk.0.attn_norm_2.weight", e, 1);
    w.wq = bind_weight(f, "blk.0.attn_q.weight", e2, nq);
    w.wk = bind_weight(f, "blk.0.attn_k.weight", e2, nk);
    w.wv = bind_weight(f, "blk.0.attn_v.weight", e2, nk);
    w.wo = bind_weight(f, "blk.0.attn_output.weight", nq, e);
    w.ffn_norm = bind_weight(f, "blk.0.ffn_norm.weight", e, 1);
    w.ffn_gate = bind_weight(f, "blk.0.ffn_gate.weight", e, hp.n_ff);
    w.ffn_up = bind_weight(f, "blk.0.ffn_up.weight", e, hp.n_ff);
    w.ffn_down = bind_weight(f, "blk.0.ffn_down.weight", hp.n_ff, e);
    w.output_norm = bind_weight(f, "output_norm.weight", e, 1);
    if (!d2t.empty() && !f.find_tensor("output.weight") && hp.n_draft_vocab != t.n_vocab)
        fail(
            "%s: d2t names %d draft tokens but the head has no 'output.weight' to score them (the target's head "
            "scores all %d): the head file is incomplete; convert it again",
            f.path().c_str(), hp.n_draft_vocab, t.n_vocab);
    w.output = own_or_target(f, "output.weight", e, hp.n_draft_vocab, t.output, t, kHeadFile);
    w.rope_freqs = bind_weight(f, "blk.0.rope_freqs.weight", hp.rope.n_rot / 2, 1, false);
    if (!w.rope_freqs) w.rope_freqs = bind_weight(f, "rope_freqs.weight", hp.rope.n_rot / 2, 1, false);
    if (w.rope_freqs) hp.rope.freq_factors = (const float*)w.rope_freqs.data;
}

std::unique_ptr<Eagle3Head> Eagle3Head::load(const std::string& path, const DrafterTarget& target) {
    std::unique_ptr<Eagle3Head> h(new Eagle3Head(GgufFile::open(path)));
    const GgufFile& f = h->file_;
    const std::string arch = f.get_str("general.architecture", "");
    if (arch != "eagle3")
        fail(
            "%s: general.architecture is '%s', not 'eagle3': this is not an EAGLE-3 head (convert one with "
            "llama.cpp's convert_hf_to_gguf.py --target-model-dir)",
            path.c_str(), arch.c_str());
    read_hparams(f, target, h->hp_);
    h->d2t_ = read_d2t(f, target, kHeadFile);
    bind_weights(f, target, h->hp_, h->w_, h->d2t_);
    Eagle3Weights& w = h->w_;
    for (Weight* m : {&w.fc, &w.wq, &w.wk, &w.wv, &w.wo, &w.ffn_gate, &w.ffn_up, &w.ffn_down})
        repack_own(*m, h->repacked_);
    if (w.output.data != target.output.data)
        repack_own(w.output, h->repacked_);  // the target's is in its layout already
    return h;
}

}  // namespace bee
