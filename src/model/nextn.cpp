// model/nextn: the MTP block as a one-layer model with its own K/V (see nextn.h).
#include "model/nextn.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "kernels/kernels.h"

namespace bee {

NextnHead::NextnHead(const Model& m, int n_ctx, ThreadPool& pool) : m_(m), pool_(pool) {
    const HParams& hp = m.hparams();
    const ModelWeights& w = m.weights();
    if (!w.nextn) fail("%s has no MTP (NextN) block to draft with", m.gguf().path().c_str());
    hp_ = hp;
    hp_.n_layer = 1;
    hp_.ssm = SsmParams{};
    LayerParams lp;
    for (const LayerParams& l : hp.layers)  // the trunk's attention layers' rope
        if (l.kv_layer >= 0) lp.rope = l.rope;
    lp.kv_layer = 0;
    hp_.layers.assign(1, lp);
    w_.layers.assign(1, w.nextn.block);
    embed_ = w.nextn.embed ? w.nextn.embed : w.tok_embd;
    head_ = w.nextn.head ? w.nextn.head : w.output;
    head_norm_ = w.nextn.head_norm ? w.nextn.head_norm : w.output_norm;
    KvCacheParams kp;
    kp.n_layer = 1;
    kp.n_cells = n_ctx;
    kp.n_embd_k = (int64_t)hp.n_head_kv * hp.head_dim;
    kp.n_embd_v = (int64_t)hp.n_head_kv * hp.head_dim_v;
    kp.n_head_kv = hp.n_head_kv;
    kp.head_dim_k = hp.head_dim;
    kp.head_dim_v = hp.head_dim_v;
    kv_ = std::make_unique<KvCache>(kp);
}

void NextnHead::reserve(int n) {
    if (n <= rows_) return;
    rows_ = n;
    const size_t e = (size_t)hp_.n_embd;
    s_.resize(hp_, n);
    x_.assign(n * e, 0.0f);
    cat_.assign(2 * n * e, 0.0f);
    hw_.assign(n * e, 0.0f);
    vis_.resize(n);
    vis_ptr_.clear();
    for (auto& v : vis_) vis_ptr_.push_back(&v);
}

void NextnHead::trunk_h(const float* x, float* h) const {
    const HParams& hp = m_.hparams();
    rms_norm(x, (const float*)m_.weights().output_norm.data, h, hp.n_embd, hp.norm_eps);
}

void NextnHead::decode(const int32_t* tokens, const int32_t* pos, const float* h_in, int n, const uint8_t* want_logits,
                       float* h_out, std::vector<float>& logits) {
    if (n <= 0) return;
    reserve(n);
    const NextnWeights& nw = m_.weights().nextn;
    const int64_t e = hp_.n_embd;
    const float eps = hp_.norm_eps;
    get_rows(embed_.type, embed_.data, e, tokens, n, hw_.data());  // embeddings, then [enorm(emb) ; hnorm(h)]
    if (hp_.embd_scale != 1.0f) scale(hw_.data(), hp_.embd_scale, n * e);
    for (int r = 0; r < n; r++) {
        rms_norm(hw_.data() + r * e, (const float*)nw.enorm.data, cat_.data() + 2 * r * e, e, eps);
        rms_norm(h_in + r * e, (const float*)nw.hnorm.data, cat_.data() + 2 * r * e + e, e, eps);
    }
    matmul(pool_, nw.eh_proj.type, nw.eh_proj.data, e, 2 * e, cat_.data(), n, x_.data(), nw.eh_proj.layout);
    std::vector<int32_t> cells(n), seq(n, 0);
    if (!kv_->alloc(n, pos, seq.data(), cells.data()))
        fail("MTP head: its K/V of %d cells is full (raise -c)", kv_->n_cells());
    kv_->seq_cells_sorted(0, cells_);
    for (int r = 0; r < n; r++) {  // every cached position up to the row's own, in position order
        vis_[r].clear();
        for (const auto& [p, c] : cells_)
            if (p <= pos[r]) vis_[r].push_back(c);
    }
    ForwardCtx c{hp_, w_, pool_, *kv_, n, pos, cells.data(), vis_ptr_.data(), vis_ptr_.data(), x_.data(), s_};
    c.seq = seq.data();
    m_.arch().forward_layer(c, 0);
    for (int r = 0; r < n; r++) rms_norm(x_.data() + r * e, (const float*)head_norm_.data, h_out + r * e, e, eps);
    std::vector<float> rows;
    for (int r = 0; r < n; r++)
        if (want_logits[r]) rows.insert(rows.end(), h_out + r * e, h_out + (r + 1) * e);
    const int n_out = (int)(rows.size() / (size_t)e);
    if (n_out == 0) return;
    const size_t base = logits.size();
    logits.resize(base + (size_t)n_out * hp_.n_vocab);
    matmul(pool_, head_.type, head_.data, m_.hparams().n_vocab, e, rows.data(), n_out, logits.data() + base,
           head_.layout);
}

}  // namespace bee
