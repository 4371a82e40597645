// model/model_load: Model::load — file, architecture table lookup, hparams, weights, tokenizer.
#include <cinttypes>

#include "base/error.h"
#include "model/model.h"

namespace bee {

std::unique_ptr<Model> Model::load(const std::string& path) {
    std::unique_ptr<Model> m(new Model(GgufFile::open(path)));
    const GgufFile& f = m->file_;
    const std::string arch = f.get_str("general.architecture");
    m->arch_ = find_arch(arch);
    if (!m->arch_)
        fail("%s: architecture '%s' is not supported (supported: %s)", path.c_str(), arch.c_str(),
             supported_archs().c_str());
    m->hp_.arch = arch;
    m->arch_->load(f, m->hp_, m->w_);
    HParams& hp = m->hp_;
    hp.n_vocab = (int)m->w_.tok_embd.ne1;
    if (m->w_.rope_freqs)
        for (LayerParams& lp : hp.layers) lp.rope.freq_factors = (const float*)m->w_.rope_freqs.data;
    m->tok_ = Tokenizer::from_gguf(f);
    if (m->tok_->n_vocab() > hp.n_vocab)
        fail("%s: tokenizer has %d tokens but token_embd.weight has only %d rows", path.c_str(),
             m->tok_->n_vocab(), hp.n_vocab);
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
