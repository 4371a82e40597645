// model/model_load: Model::load — file, architecture table lookup, hparams, weights, tokenizer.
#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>

#include "base/error.h"
#include "model/check_tensors.h"
#include "model/model.h"
#include "quant/quant.h"

namespace bee {

// Matrices go into the layout the active ISA's matmul reads fastest (kernels/repack.h). The copy
// replaces the mapped bytes, whose pages are handed back to the page cache (the mapping is read-only
// and private, so nothing is lost: they would simply be read again from the file), so RSS holds the
// repacked copy instead of the file's pages, not both. A head tied to token_embd gets its own copy:
// token_embd stays the mapped GGUF rows, of which get_rows reads one per token.
static void repack_weight_in_place(ModelWeights& w, Weight& m) {
    if (!m) return;
    RepackedWeight r = repack_weight(m.type, m.data, m.ne1, m.ne0);
    if (!r.data) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t b = ((uintptr_t)m.data + page - 1) & ~(page - 1);
    const uintptr_t e = ((uintptr_t)m.data + ggml_row_size(m.type, m.ne0) * m.ne1) & ~(page - 1);
    if (e > b) madvise((void*)b, e - b, MADV_DONTNEED);
    m.data = r.data.get();
    m.layout = r.layout;
    w.repacked.push_back(std::move(r.data));
}

static void repack_weights(ModelWeights& w) {
    std::vector<LayerWeights*> layers;
    for (LayerWeights& L : w.layers) layers.push_back(&L);
    if (w.nextn) layers.push_back(&w.nextn.block);
    for (LayerWeights* L : layers)
        for (Weight* m : {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up, &L->ffn_down, &L->wqkv, &L->wgate,
                          &L->ssm_beta, &L->ssm_alpha, &L->ssm_out})
            repack_weight_in_place(w, *m);
    repack_weight_in_place(w, w.output);
    repack_weight_in_place(w, w.nextn.eh_proj);
    repack_weight_in_place(w, w.nextn.head);
}

// The load-time settings become metadata, so each architecture reads them as its own: llama.cpp's
// --rope-freq-base / --rope-freq-scale replace the file's base and scaling factor, and a scale given
// without --rope-scaling means linear scaling unless the file says none or yarn (as llama.cpp, whose
// default type is linear); the --yarn-* values replace the file's. Gemma 3's local layers keep their own base, as in llama.cpp.
static void apply_load_params(GgufFile& f, const ModelLoadParams& lp) {
    apply_gguf_overrides(f, lp.kv_overrides);
    const std::string rope = f.get_str("general.architecture") + ".rope.";
    if (lp.rope_freq_base > 0)
        f.set_metadata(rope + "freq_base", GgufValue::make_float(GgufValueType::FLOAT32, lp.rope_freq_base));
    if (!lp.rope_scaling.empty()) f.set_metadata(rope + "scaling.type", GgufValue::make_str(lp.rope_scaling));
    if (lp.rope_freq_scale > 0) {
        if (lp.rope_scaling.empty() && f.get_str(rope + "scaling.type", "linear") == "linear")
            f.set_metadata(rope + "scaling.type", GgufValue::make_str("linear"));
        f.set_metadata(rope + "scaling.factor",
                       GgufValue::make_float(GgufValueType::FLOAT32, 1.0 / lp.rope_freq_scale));
    }
    auto set_f32 = [&](const char* key, float v) {
        if (v >= 0) f.set_metadata(rope + key, GgufValue::make_float(GgufValueType::FLOAT32, v));
    };
    set_f32("scaling.yarn_ext_factor", lp.yarn_ext_factor);
    set_f32("scaling.yarn_attn_factor", lp.yarn_attn_factor);
    set_f32("scaling.yarn_beta_fast", lp.yarn_beta_fast);
    set_f32("scaling.yarn_beta_slow", lp.yarn_beta_slow);
    if (lp.yarn_orig_ctx > 0)
        f.set_metadata(rope + "scaling.original_context_length",
                       GgufValue::make_uint(GgufValueType::UINT32, (uint64_t)lp.yarn_orig_ctx));
    if (lp.check_tensors) check_tensor_data(f);
}

std::unique_ptr<Model> Model::load(const std::string& path, const ModelLoadParams& lp) {
    std::unique_ptr<Model> m(new Model(GgufFile::open(path)));
    apply_load_params(m->file_, lp);
    const GgufFile& f = m->file_;
    const std::string arch = f.get_str("general.architecture");
    m->arch_ = find_arch(arch);
    if (!m->arch_)
        fail("%s: architecture '%s' is not supported (supported: %s)", path.c_str(), arch.c_str(),
             supported_archs().c_str());
    m->hp_.arch = arch;
    m->arch_->load(f, m->hp_, m->w_);
    repack_weights(m->w_);
    HParams& hp = m->hp_;
    if (m->w_.tok_embd.ne1 <= 0 || m->w_.tok_embd.ne1 > INT32_MAX)
        fail("%s: token_embd.weight has %lld rows: the vocabulary size must be in [1, 2^31)", path.c_str(),
             (long long)m->w_.tok_embd.ne1);
    hp.n_vocab = (int)m->w_.tok_embd.ne1;
    if (m->w_.rope_freqs)
        for (LayerParams& lp : hp.layers) lp.rope.freq_factors = (const float*)m->w_.rope_freqs.data;
    const QuantTraits* te = quant_traits(m->w_.tok_embd.type);
    if (!te || !te->dequantize_row)
        fail("%s: token_embd.weight has type %s, which the token lookup (get_rows) cannot read", path.c_str(),
             ggml_type_name(m->w_.tok_embd.type));
    const int64_t declared = f.get_int(arch + ".vocab_size", hp.n_vocab);
    if (hp.n_vocab <= 0 || declared != hp.n_vocab)
        fail("%s: %s.vocab_size is %lld but token_embd.weight has %d rows", path.c_str(), arch.c_str(),
             (long long)declared, hp.n_vocab);
    m->tok_ = Tokenizer::from_gguf(f);
    if (m->tok_->n_vocab() <= 0) fail("%s: the tokenizer has no tokens", path.c_str());
    if (m->tok_->n_vocab() > hp.n_vocab)
        fail("%s: tokenizer has %d tokens but token_embd.weight has only %d rows", path.c_str(), m->tok_->n_vocab(),
             hp.n_vocab);
    return m;
}

size_t Model::weight_bytes() const {
    size_t n = 0;
    for (const GgufTensor& t : file_.tensors()) n += t.nbytes;
    return n;
}

std::string Model::describe() const {
    int64_t params = 0;
    for (const GgufTensor& t : file_.tensors()) params += t.n_elements();
    return strfmt("%s, %d layers, n_embd %d, %d heads (%d kv) x %d, n_ff %d, vocab %d, %.1f M params, %.1f MiB",
                  hp_.arch.c_str(), hp_.n_layer, hp_.n_embd, hp_.n_head, hp_.n_head_kv, hp_.head_dim, hp_.n_ff,
                  hp_.n_vocab, params / 1e6, weight_bytes() / 1048576.0);
}

}  // namespace bee
