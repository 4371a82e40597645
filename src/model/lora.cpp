// model/lora: adapter loading and checking against the model, and the low-rank update in the forward pass.
#include "model/lora.h"

#include <cmath>
#include <cstring>
#include <map>

#include "base/error.h"
#include "base/log.h"
#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "quant/quant.h"

namespace bee {

namespace {

struct TargetName {
    const char* name;  // blk.N.<name>.weight
    LoraTarget target;
};
constexpr TargetName kTargets[] = {
    {"attn_q", LoraTarget::q},      {"attn_k", LoraTarget::k},      {"attn_v", LoraTarget::v},
    {"attn_output", LoraTarget::o}, {"ffn_gate", LoraTarget::gate}, {"ffn_up", LoraTarget::up},
    {"ffn_down", LoraTarget::down},
};
constexpr const char* kSupported = "attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down and output";

bool ends_with(const std::string& s, const char* suffix) {
    const size_t n = strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

const Weight& layer_weight(const LayerWeights& L, LoraTarget t) {
    switch (t) {
        case LoraTarget::q: return L.wq;
        case LoraTarget::k: return L.wk;
        case LoraTarget::v: return L.wv;
        case LoraTarget::o: return L.wo;
        case LoraTarget::gate: return L.ffn_gate;
        case LoraTarget::up: return L.ffn_up;
        case LoraTarget::down: break;
    }
    return L.ffn_down;
}

}  // namespace

struct LoraLoader {
    LoraAdapter& ad;
    const GgufFile& f;
    const Model& model;

    // "blk.N.attn_q.weight" -> the pair slot and the model weight it adapts; throws for names Bee does not adapt.
    LoraPair& slot(const std::string& base, const Weight** w) {
        const ModelWeights& mw = model.weights();
        if (base == "output.weight") {
            if (!model.gguf().find_tensor(base))
                fail(
                    "%s: LoRA tensors for '%s', but the model has no such tensor (its output head is tied to "
                    "token_embd): the adapter was made for another base model",
                    f.path().c_str(), base.c_str());
            *w = &mw.output;
            return ad.output_;
        }
        int il = -1, n = 0;
        char name[64] = {};
        if (sscanf(base.c_str(), "blk.%d.%63[^.].weight%n", &il, name, &n) == 2 && (size_t)n == base.size() &&
            il >= 0 && il < (int)mw.layers.size())
            for (const TargetName& t : kTargets)
                if (strcmp(t.name, name) == 0) {
                    *w = &layer_weight(mw.layers[(size_t)il], t.target);
                    if (!**w) break;
                    return ad.layers_[(size_t)il][(size_t)t.target];
                }
        if (!model.gguf().find_tensor(base))
            fail(
                "%s: LoRA tensors for '%s', which the model does not have: the adapter was made for another base model",
                f.path().c_str(), base.c_str());
        fail("%s: LoRA tensors for '%s': Bee applies LoRA to %s only", f.path().c_str(), base.c_str(), kSupported);
    }

    // The tensor as a matrix of ne[1] rows of ne[0]: F32, F16 and BF16 rows are read in the mapped file
    // (matmul takes them with f32 activations, exactly); other types are decoded to F32 rows owned by the
    // adapter. Every value must be finite.
    Weight matrix(const GgufTensor& t) {
        const QuantTraits* qt = quant_traits(t.type);
        if (!qt || !qt->dequantize_row)
            fail("%s: tensor '%s' has type %s, which Bee cannot read (use f32, f16, bf16 or q8_0)", f.path().c_str(),
                 t.name.c_str(), ggml_type_name(t.type) ? ggml_type_name(t.type) : "?");
        if (t.ne[2] != 1 || t.ne[3] != 1)
            fail("%s: tensor '%s' has %d dimensions; LoRA tensors are matrices", f.path().c_str(), t.name.c_str(),
                 t.n_dims);
        std::vector<float> v((size_t)(t.ne[0] * t.ne[1]));
        const size_t row_bytes = ggml_row_size(t.type, t.ne[0]);
        for (int64_t r = 0; r < t.ne[1]; r++)
            qt->dequantize_row(t.data + (size_t)r * row_bytes, v.data() + (size_t)r * t.ne[0], t.ne[0]);
        for (float x : v)
            if (!std::isfinite(x))
                fail("%s: tensor '%s' holds a value that is not finite", f.path().c_str(), t.name.c_str());
        Weight w;
        w.ne0 = t.ne[0];
        w.ne1 = t.ne[1];
        if (t.type == GgmlType::F32 || t.type == GgmlType::F16 || t.type == GgmlType::BF16) {
            w.type = t.type;
            w.data = t.data;
            return w;
        }
        w.type = GgmlType::F32;
        w.data = ad.data_.emplace_back(std::move(v)).data();
        return w;
    }

    void add_pair(const std::string& base, const GgufTensor& a, const GgufTensor& b) {
        const Weight* w = nullptr;
        LoraPair& p = slot(base, &w);
        // W is (n_out = ne1, n_in = ne0): A must be [n_in, rank] and B [rank, n_out] (llama.cpp's layout)
        if (a.ne[0] != w->ne0 || b.ne[1] != w->ne1)
            fail(
                "%s: '%s' has shape [%lld, %lld] and '%s' [%lld, %lld], but '%s' is [%lld, %lld] (expected lora_a "
                "[%lld, rank], lora_b [rank, %lld]): the adapter was made for another base model",
                f.path().c_str(), a.name.c_str(), (long long)a.ne[0], (long long)a.ne[1], b.name.c_str(),
                (long long)b.ne[0], (long long)b.ne[1], base.c_str(), (long long)w->ne0, (long long)w->ne1,
                (long long)w->ne0, (long long)w->ne1);
        if (a.ne[1] != b.ne[0])
            fail("%s: '%s' has rank %lld but '%s' has rank %lld (lora_a must be [n_in, rank], lora_b [rank, n_out])",
                 f.path().c_str(), a.name.c_str(), (long long)a.ne[1], b.name.c_str(), (long long)b.ne[0]);
        p.a = matrix(a);
        p.b = matrix(b);
        p.scale_mul = ad.alpha_ != 0 ? ad.alpha_ / (float)a.ne[1] : 1.0f;
        ad.n_pairs_++;
    }

    void load() {
        const std::string type = f.get_str("general.type", "");
        if (type != "adapter")
            fail(
                "%s: not a LoRA adapter: general.type is '%s', expected 'adapter' (is it a model? give models with -m)",
                f.path().c_str(), type.c_str());
        const std::string kind = f.get_str("adapter.type", "");
        if (kind != "lora")
            fail("%s: adapter.type is '%s': Bee loads 'lora' adapters only", f.path().c_str(), kind.c_str());
        const std::string arch = f.get_str("general.architecture", "");
        if (arch != model.hparams().arch)
            fail("%s: the adapter is for architecture '%s' but the model is '%s'", f.path().c_str(), arch.c_str(),
                 model.hparams().arch.c_str());
        const double alpha = f.get_float("adapter.lora.alpha", 0.0);
        if (!std::isfinite(alpha)) fail("%s: adapter.lora.alpha is not a finite number", f.path().c_str());
        ad.alpha_ = (float)alpha;
        ad.task_name_ = f.get_str("adapter.lora.task_name", "");
        ad.prompt_prefix_ = f.get_str("adapter.lora.prompt_prefix", "");
        if (f.has("adapter.alora.invocation_tokens"))
            fail("%s: activated LoRA (aLoRA) adapters are not supported", f.path().c_str());
        ad.layers_.resize(model.weights().layers.size());
        std::map<std::string, std::pair<const GgufTensor*, const GgufTensor*>> pairs;  // base name -> (A, B)
        for (const GgufTensor& t : f.tensors()) {
            if (ends_with(t.name, ".lora_a")) {
                pairs[t.name.substr(0, t.name.size() - 7)].first = &t;
            } else if (ends_with(t.name, ".lora_b")) {
                pairs[t.name.substr(0, t.name.size() - 7)].second = &t;
            } else if (ends_with(t.name, "_norm.weight")) {  // as llama.cpp: norm vectors are not applied
                BEE_LOG_WARN("%s: tensor '%s' is not applied (LoRA adapts matrices only)", f.path().c_str(),
                             t.name.c_str());
            } else {
                fail("%s: tensor '%s' is not a LoRA tensor (names end in .lora_a or .lora_b)", f.path().c_str(),
                     t.name.c_str());
            }
        }
        for (const auto& [base, ab] : pairs) {
            if (!ab.first || !ab.second)
                fail("%s: '%s' has %s but no %s", f.path().c_str(), base.c_str(), ab.first ? "lora_a" : "lora_b",
                     ab.first ? "lora_b" : "lora_a");
            add_pair(base, *ab.first, *ab.second);
        }
        if (ad.n_pairs_ == 0) fail("%s: the adapter has no LoRA tensors", f.path().c_str());
    }
};

std::unique_ptr<LoraAdapter> LoraAdapter::load(const std::string& path, const Model& model) {
    std::unique_ptr<LoraAdapter> ad(new LoraAdapter());
    ad->path_ = path;
    ad->file_ = std::make_unique<GgufFile>(GgufFile::open(path));
    LoraLoader{*ad, *ad->file_, model}.load();
    return ad;
}

// note: the rows of a use are gathered into lb.in unless the use covers every row, so A · x runs on
// exactly the rows that need it; matmul reduces each row on its own (kernels.h), so a row's bits are the
// same whichever rows share its ubatch.
void lora_apply(ThreadPool& pool, LoraBatch& lb, int il, LoraTarget t, const float* in, float* out) {
    for (const LoraUse& u : lb.uses) {
        const LoraPair* p = il < 0 ? u.adapter->output() : u.adapter->layer(il, t);
        if (!p) continue;
        const int64_t n_in = p->a.ne0, rank = p->a.ne1, n_out = p->b.ne1;
        const int64_t n = (int64_t)u.rows.size();
        const bool all = n == lb.n_rows;
        const float* x = in;
        if (!all) {
            lb.in.resize((size_t)(n * n_in));
            for (int64_t j = 0; j < n; j++)
                memcpy(&lb.in[(size_t)(j * n_in)], in + (size_t)u.rows[(size_t)j] * n_in, (size_t)n_in * sizeof(float));
            x = lb.in.data();
        }
        lb.mid.resize((size_t)(n * rank));
        lb.delta.resize((size_t)(n * n_out));
        matmul(pool, p->a.type, p->a.data, rank, n_in, x, n, lb.mid.data());
        matmul(pool, p->b.type, p->b.data, n_out, rank, lb.mid.data(), n, lb.delta.data());
        for (int64_t j = 0; j < n; j++) {
            const float s = u.scale[(size_t)j] * p->scale_mul;
            const float* d = &lb.delta[(size_t)(j * n_out)];
            float* y = out + (size_t)u.rows[(size_t)j] * n_out;
            for (int64_t o = 0; o < n_out; o++) y[o] += s * d[o];
        }
    }
}

}  // namespace bee
