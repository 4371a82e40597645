// runtime/embed: one sequence's embedding or rank score: prefix kept where allowed, decode with capture, pool.
#include "runtime/embed.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/prompt_cache.h"

namespace bee::runtime {

std::vector<float> embed_tokens(Engine& eng, int32_t seq, std::vector<int32_t>& slot_cache,
                                const std::vector<int32_t>& tokens, Pooling pooling, int32_t* n_reused) {
    if (tokens.empty()) fail("embedding: no tokens");
    const bool last_only = pooling == Pooling::last || pooling == Pooling::rank;
    SeqMemory& mem = eng.memory();
    size_t keep = last_only ? std::min(common_prefix(slot_cache, tokens), tokens.size() - 1) : 0;
    keep = (size_t)mem.cut_point(seq, (int32_t)keep);
    mem.cut(seq, (int32_t)keep);
    slot_cache.resize(keep);
    if (n_reused) *n_reused = (int32_t)keep;

    Batch b;
    for (size_t i = keep; i < tokens.size(); i++) b.add(tokens[i], (int32_t)i, seq, false);
    b.capture_layers = {eng.model().hparams().n_layer};  // the final hidden state, before the output norm
    if (last_only) {
        b.capture.assign((size_t)b.size(), 0);
        b.capture.back() = 1;
    }
    DecodeOutput out;
    eng.decode(b, out);
    slot_cache = tokens;
    if (last_only) return pool_hidden(eng.model(), eng.pool(), out.hidden_at(0, 0), 1, pooling);
    return pool_hidden(eng.model(), eng.pool(), out.hidden.data(), (int)tokens.size(), pooling);
}

}  // namespace bee::runtime
