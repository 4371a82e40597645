// spec/dflash/dflash_model_load: DflashModel::load — the keys and tensors of llama.cpp's `dflash` GGUF
// (specs/drafters.md §8.2, §8.7) and of the fork's `dflash-draft` (§2.3 a), mapped onto one DflashHParams /
// DflashWeights with model/'s helpers, and checked against the target.
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "model/forward.h"
#include "model/model.h"
#include "spec/dflash/dflash_model.h"

namespace bee {

namespace {

constexpr DrafterFileKind kDrafterFile = {"drafter", "dflash", "", "another vocabulary"};

// Where the two dialects keep the same thing.
struct DialectNames {
    const char* arch;          // key prefix
    const char* layers_key;    // target layer ids (after the prefix)
    const char* block_key;     // block size (after the prefix)
    int layer_offset;          // added to each stored id to get Bee's capture id (layer input)
    const char* mask_keys[2];  // mask token id, first found wins
    const char* fc;
    const char* hidden_norm;
    const char* ffn_norm;  // per layer, after "blk.i."
};
const DialectNames kLlamaCpp = {"dflash",
                                "target_layers",
                                "block_size",
                                0,
                                {"tokenizer.ggml.mask_token_id", "dflash.mask_token_id"},
                                "fc.weight",
                                "enc.output_norm.weight",
                                "ffn_norm.weight"};
const DialectNames kFork = {"dflash-draft",
                            "dflash.target_layer_ids",
                            "dflash.block_size",
                            1,
                            {"dflash-draft.dflash.mask_token_id", "tokenizer.ggml.mask_token_id"},
                            "dflash_fc.weight",
                            "dflash_hidden_norm.weight",
                            "post_attention_norm.weight"};

std::string ids_text(const std::vector<int64_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); i++) s += (i ? ", " : "") + std::to_string(ids[i]);
    return "[" + s + "]";
}

void read_target_layers(const GgufFile& f, const DialectNames& d, const DrafterTarget& t, DflashHParams& hp) {
    const char* path = f.path().c_str();
    const std::string key = std::string(d.arch) + "." + d.layers_key;
    if (!f.has(key))
        fail("%s: %s is missing: the drafter does not say which target layers it reads; convert it again", path,
             key.c_str());
    const std::vector<int64_t> ids = f.get_int_array(key);
    if (ids.empty()) fail("%s: %s is empty: a DFlash drafter reads at least one target layer", path, key.c_str());
    for (int64_t id : ids)
        if (id < 0 || id >= t.n_layer)
            fail(
                "%s: %s = %s but the target %s has %d layers (ids 0..%d, %s): this drafter was made for another "
                "model; use the drafter trained for this target",
                path, key.c_str(), ids_text(ids).c_str(), t.name.c_str(), t.n_layer, t.n_layer - 1,
                d.layer_offset ? "HF layer outputs" : "llama.cpp's layer inputs, HF ids + 1");
    for (int64_t id : ids) hp.target_layers.push_back((int32_t)id + d.layer_offset);
    const std::string nf_key = std::string(d.arch) + ".dflash.n_target_features";
    if (f.has(nf_key) && f.get_int(nf_key) != hp.n_features())
        fail("%s: %s is %lld but %zu target layers of hidden size %d make %d: the file is inconsistent", path,
             nf_key.c_str(), (long long)f.get_int(nf_key), ids.size(), hp.n_embd, hp.n_features());
}

// <arch>.attention.sliding_window with its per-layer pattern (bool or integer array, one entry a layer).
void read_sliding_window(const GgufFile& f, const std::string& a, int n_swa, DflashHParams& hp) {
    hp.swa.assign(hp.n_layer, 0);
    if (n_swa <= 0) return;
    hp.n_swa = n_swa;
    const std::string key = a + ".attention.sliding_window_pattern";
    const GgufValue* v = f.find(key);
    if (!v)
        fail("%s: %s.attention.sliding_window is %d but %s is missing: the file does not say which layers slide",
             f.path().c_str(), a.c_str(), n_swa, key.c_str());
    GgufValue elem;
    elem.type = v->arr_type;
    if (v->type != GgufValueType::ARRAY || !(elem.is_integer() || elem.type == GgufValueType::BOOL) ||
        (int)v->arr.size() != hp.n_layer)
        fail("%s: %s must be an array of %d bools (one per layer)", f.path().c_str(), key.c_str(), hp.n_layer);
    for (int il = 0; il < hp.n_layer; il++) hp.swa[il] = v->arr[il].u64 != 0 || v->arr[il].i64 != 0;
}

void read_hparams(const GgufFile& f, const DialectNames& d, const DrafterTarget& t, DflashHParams& hp) {
    const char* path = f.path().c_str();
    const std::string a = d.arch;
    if (f.has(a + ".hyper_connection_count") || f.find_tensor("markov_w1.weight"))
        fail(
            "%s: this is a DSpark drafter (a Markov head or DeepSeek-V4 stages), which Bee does not run: use a plain "
            "DFlash drafter",
            path);
    HParams common;
    common.arch = a;
    load_common_hparams(f, common);
    if (common.head_dim_v != common.head_dim)
        fail("%s: value length %d differs from key length %d: not a DFlash drafter", path, common.head_dim_v,
             common.head_dim);
    hp.n_embd = common.n_embd;
    hp.n_layer = common.n_layer;
    hp.n_head = common.n_head;
    hp.n_head_kv = common.n_head_kv;
    hp.head_dim = common.head_dim;
    hp.n_ff = common.n_ff;
    hp.norm_eps = common.norm_eps;
    hp.attn_scale = common.attn_scale;
    hp.rope = common.layers[0].rope;
    hp.rope.mode = RopeMode::neox;
    if (hp.n_embd != t.n_embd)
        fail(
            "%s: %s.embedding_length is %d but the target %s has hidden size %d: a DFlash drafter reads the target's "
            "hidden states and embeddings at its own width; use the drafter trained for this target",
            path, a.c_str(), hp.n_embd, t.name.c_str(), t.n_embd);
    const std::string block_key = a + "." + d.block_key;
    const int64_t block = f.get_int(block_key, 16);
    if (block < 2 || block > 4096)
        fail("%s: %s is %lld: a block is the last token and 1..4095 masks", path, block_key.c_str(), (long long)block);
    hp.block_size = (int)block;
    const char* mask_key = f.has(d.mask_keys[0]) ? d.mask_keys[0] : f.has(d.mask_keys[1]) ? d.mask_keys[1] : nullptr;
    if (!mask_key)
        fail("%s: the drafter has no mask token (%s): convert it again with the target's tokenizer", path,
             d.mask_keys[0]);
    const int64_t mask = f.get_int(mask_key);
    if (mask < 0 || mask >= t.n_vocab)
        fail(
            "%s: %s = %lld is not a token of the target %s (0..%d): the drafter was converted for another "
            "vocabulary; use the drafter trained for this target",
            path, mask_key, (long long)mask, t.name.c_str(), t.n_vocab - 1);
    hp.mask_token = (int32_t)mask;
    read_target_layers(f, d, t, hp);
    read_sliding_window(f, a, common.n_swa, hp);
}

void bind_weights(const GgufFile& f, const DialectNames& d, const DrafterTarget& t, DflashHParams& hp, DflashWeights& w,
                  const std::vector<int32_t>& d2t) {
    const int64_t e = hp.n_embd, nq = (int64_t)hp.n_head * hp.head_dim, nk = (int64_t)hp.n_head_kv * hp.head_dim;
    hp.n_draft_vocab = d2t.empty() ? t.n_vocab : (int)d2t.size();
    w.fc = bind_weight(f, d.fc, hp.n_features(), e);
    if (const Weight s = bind_weight(f, "fc.scale", 1, 1, false)) hp.fc_scale = *(const float*)s.data;
    if (!std::isfinite(hp.fc_scale))
        fail("%s: tensor 'fc.scale' is %g: it must be a finite number", f.path().c_str(), hp.fc_scale);
    w.hidden_norm = bind_weight(f, d.hidden_norm, e, 1);
    w.tok_embd = own_or_target(f, "token_embd.weight", e, t.n_vocab, t.tok_embd, t, kDrafterFile);
    w.output_norm = bind_weight(f, "output_norm.weight", e, 1);
    if (!d2t.empty() && !f.find_tensor("output.weight") && hp.n_draft_vocab != t.n_vocab)
        fail(
            "%s: d2t names %d draft tokens but the drafter has no 'output.weight' to score them (the target's head "
            "scores all %d): the file is incomplete; convert it again",
            f.path().c_str(), hp.n_draft_vocab, t.n_vocab);
    w.output = own_or_target(f, "output.weight", e, hp.n_draft_vocab, t.output, t, kDrafterFile);
    w.layers.resize(hp.n_layer);
    for (int il = 0; il < hp.n_layer; il++) {
        const std::string p = "blk." + std::to_string(il) + ".";
        DflashLayer& L = w.layers[il];
        L.attn_norm = bind_weight(f, p + "attn_norm.weight", e, 1);
        L.wq = bind_weight(f, p + "attn_q.weight", e, nq);
        L.wk = bind_weight(f, p + "attn_k.weight", e, nk);
        L.wv = bind_weight(f, p + "attn_v.weight", e, nk);
        L.wo = bind_weight(f, p + "attn_output.weight", nq, e);
        L.q_norm = bind_weight(f, p + "attn_q_norm.weight", hp.head_dim, 1);
        L.k_norm = bind_weight(f, p + "attn_k_norm.weight", hp.head_dim, 1);
        L.ffn_norm = bind_weight(f, p + d.ffn_norm, e, 1);
        L.ffn_gate = bind_weight(f, p + "ffn_gate.weight", e, hp.n_ff);
        L.ffn_up = bind_weight(f, p + "ffn_up.weight", e, hp.n_ff);
        L.ffn_down = bind_weight(f, p + "ffn_down.weight", hp.n_ff, e);
    }
}

}  // namespace

std::unique_ptr<DflashModel> DflashModel::load(const std::string& path, const DrafterTarget& target) {
    std::unique_ptr<DflashModel> m(new DflashModel(GgufFile::open(path)));
    const GgufFile& f = m->file_;
    const std::string arch = f.get_str("general.architecture", "");
    if (arch != kLlamaCpp.arch && arch != kFork.arch)
        fail(
            "%s: general.architecture is '%s', not 'dflash' (llama.cpp) or 'dflash-draft' (BeeLlama/buun): this is "
            "not a DFlash drafter",
            path.c_str(), arch.c_str());
    const DialectNames& d = arch == kFork.arch ? kFork : kLlamaCpp;
    m->hp_.dialect = arch == kFork.arch ? DflashDialect::fork : DflashDialect::llama_cpp;
    read_hparams(f, d, target, m->hp_);
    m->d2t_ = read_d2t(f, target, kDrafterFile);
    bind_weights(f, d, target, m->hp_, m->w_, m->d2t_);
    DflashWeights& w = m->w_;
    repack_own(w.fc, m->repacked_);
    for (DflashLayer& L : w.layers)
        for (Weight* x : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down})
            repack_own(*x, m->repacked_);
    if (w.output.data != target.output.data) repack_own(w.output, m->repacked_);  // the target's is repacked already
    return m;
}

}  // namespace bee
