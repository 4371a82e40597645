// spec/drafter_file: the target facts, d2t and borrowed tensors of hidden-state drafter files.
#include "spec/drafter_file.h"

#include <cstring>

#include "base/error.h"
#include "model/forward.h"
#include "model/model.h"

namespace bee {

DrafterTarget drafter_target_of(const Model& target) {
    DrafterTarget t;
    t.name = target.gguf().path();
    t.n_embd = target.hparams().n_embd;
    t.n_vocab = target.hparams().n_vocab;
    t.n_layer = target.hparams().n_layer;
    t.tok_embd = target.weights().tok_embd;
    t.output = target.weights().output;
    return t;
}

std::vector<int32_t> read_d2t(const GgufFile& f, const DrafterTarget& t, const DrafterFileKind& k) {
    const char* path = f.path().c_str();
    const GgufTensor* d = f.find_tensor("d2t");
    if (!d) return {};
    if (d->type != GgmlType::I64)
        fail("%s: tensor 'd2t' has type %s: llama.cpp's %s format stores absolute target ids as i64%s", path,
             ggml_type_name(d->type) ? ggml_type_name(d->type) : "?", k.format, k.reconvert);
    if (d->n_dims != 1 || d->ne[0] <= 0 || d->ne[0] > t.n_vocab)
        fail(
            "%s: tensor 'd2t' has %lld entries in %d dimensions: expected one row of at most %d (the target's "
            "vocabulary)",
            path, (long long)d->ne[0], d->n_dims, t.n_vocab);
    std::vector<int32_t> out((size_t)d->ne[0]);
    for (size_t i = 0; i < out.size(); i++) {
        int64_t id;
        std::memcpy(&id, d->data + i * sizeof(int64_t), sizeof id);
        if (id < 0 || id >= t.n_vocab)
            fail("%s: d2t[%zu] = %lld is not a token of the target %s (0..%d): the %s was converted against %s", path,
                 i, (long long)id, t.name.c_str(), t.n_vocab - 1, k.what, k.wrong_vocab);
        out[i] = (int32_t)id;
    }
    return out;
}

Weight own_or_target(const GgufFile& f, const char* name, int64_t ne0, int64_t ne1, const Weight& target,
                     const DrafterTarget& t, const DrafterFileKind& k) {
    Weight w = bind_weight(f, name, ne0, ne1, false);
    if (w) return w;
    if (!target || target.ne0 != ne0 || target.ne1 != ne1)
        fail(
            "%s: the %s has no '%s', so it would use the target's, which is [%lld, %lld] where the %s needs "
            "[%lld, %lld] (target %s): use a %s that carries its own '%s'",
            f.path().c_str(), k.what, name, (long long)target.ne0, (long long)target.ne1, k.what, (long long)ne0,
            (long long)ne1, t.name.c_str(), k.what, name);
    return target;
}

void repack_own(Weight& m, std::vector<AlignedBytes>& store) {
    if (!m || m.layout != WeightLayout::gguf) return;
    RepackedWeight r = repack_weight(m.type, m.data, m.ne1, m.ne0);
    if (!r.data) return;
    m.data = r.data.get();
    m.layout = r.layout;
    store.push_back(std::move(r.data));
}

}  // namespace bee
