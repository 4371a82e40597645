// model/pooling: output norm + pooling of final hidden states, and the rerankers' classification head.
#include "model/pooling.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/kernels.h"
#include "model/forward.h"
#include "model/model.h"

namespace bee {

namespace {

constexpr const char* kPoolingNames[] = {"none", "mean", "cls", "last", "rank"};

// A 2-D head matrix with the file's row count: row length `ne0`, any number of rows.
Weight bind_head_matrix(const GgufFile& f, const std::string& name, int64_t ne0) {
    const GgufTensor* t = f.find_tensor(name);
    if (!t) return {};
    if (t->ne[0] != ne0)
        fail("%s: tensor '%s' has rows of %lld values, expected %lld (the head's input)", f.path().c_str(),
             name.c_str(), (long long)t->ne[0], (long long)ne0);
    return bind_weight(f, name, ne0, t->ne[1]);
}

// y (n_out) = W · x (+ b)
void head_linear(ThreadPool& pool, const Weight& w, const Weight& b, const float* x, std::vector<float>& y) {
    y.assign((size_t)w.ne1, 0.0f);
    matmul(pool, w.type, w.data, w.ne1, w.ne0, x, 1, y.data(), w.layout);
    if (b)
        for (int64_t i = 0; i < w.ne1; i++) y[i] += ((const float*)b.data)[i];
}

}  // namespace

Pooling parse_pooling(const std::string& name, const char* where) {
    for (int i = 0; i < 5; i++)
        if (name == kPoolingNames[i]) return (Pooling)i;
    fail("invalid value '%s' for %s: expected none, mean, cls, last or rank", name.c_str(), where);
}

const char* pooling_name(Pooling p) { return p == Pooling::unspecified ? "unspecified" : kPoolingNames[(int)p]; }

void bind_rank_head(const GgufFile& f, const HParams& hp, ModelWeights& w) {
    w.cls = bind_head_matrix(f, "cls.weight", hp.n_embd);
    if (w.cls) w.cls_b = bind_weight(f, "cls.bias", w.cls.ne1, 1, false);
    w.cls_out = bind_head_matrix(f, "cls.output.weight", w.cls ? w.cls.ne1 : hp.n_embd);
    if (w.cls_out) w.cls_out_b = bind_weight(f, "cls.output.bias", w.cls_out.ne1, 1, false);
}

bool has_rank_head(const Model& m) { return m.weights().cls || m.weights().cls_out; }

int pooled_width(const Model& m, Pooling p) {
    const ModelWeights& w = m.weights();
    if (p != Pooling::rank) return m.hparams().n_embd;
    return (int)(w.cls_out ? w.cls_out.ne1 : w.cls ? w.cls.ne1 : m.hparams().n_embd);
}

std::vector<float> pool_hidden(const Model& m, ThreadPool& pool, const float* hidden, int n_tokens, Pooling p) {
    const HParams& hp = m.hparams();
    const ModelWeights& w = m.weights();
    const size_t n_embd = (size_t)hp.n_embd;
    if (n_tokens <= 0) fail("pooling: no tokens");
    if (p == Pooling::rank && !has_rank_head(m)) fail("rank pooling: the model has no classification head");
    // Rows the pooling reads, output-normed (result_norm in llama.cpp's graphs).
    const bool all_rows = p == Pooling::none || p == Pooling::mean;
    const int first = all_rows || p == Pooling::cls ? 0 : n_tokens - 1;
    const int n = all_rows ? n_tokens : 1;
    std::vector<float> normed((size_t)n * n_embd);
    for (int i = 0; i < n; i++)
        rms_norm(hidden + (size_t)(first + i) * n_embd, (const float*)w.output_norm.data, &normed[i * n_embd],
                 hp.n_embd, hp.norm_eps);
    if (p == Pooling::none || p == Pooling::cls || p == Pooling::last) return normed;
    if (p == Pooling::mean) {
        std::vector<float> mean(n_embd, 0.0f);
        for (int i = 0; i < n; i++)
            for (size_t j = 0; j < n_embd; j++) mean[j] += normed[i * n_embd + j];
        for (float& v : mean) v /= (float)n;
        return mean;
    }
    std::vector<float> x = std::move(normed), y;
    if (w.cls) {  // dense + tanh (RoBERTa-style classification head)
        head_linear(pool, w.cls, w.cls_b, x.data(), y);
        for (float& v : y) v = std::tanh(v);
        x.swap(y);
    }
    if (w.cls_out) {
        head_linear(pool, w.cls_out, w.cls_out_b, x.data(), y);
        x.swap(y);
    }
    if (hp.rank_softmax) {
        const float mx = *std::max_element(x.begin(), x.end());
        float sum = 0;
        for (float& v : x) sum += (v = std::exp(v - mx));
        for (float& v : x) v /= sum;
    }
    return x;
}

}  // namespace bee
