// runtime/embed: an embedding or a rerank score for one token sequence, computed in a slot's KV
// sequence on the inference thread (a Task's engine_action): no logits, the final hidden states
// captured and pooled (model/pooling).
#pragma once
#include <cstdint>
#include <vector>

#include "model/engine.h"
#include "model/pooling.h"

namespace bee::runtime {

// Decodes `tokens` (positions 0..n-1) in sequence `seq`, capturing the hidden state after the last layer,
// and pools it: (rows, pooled_width) as model/pooling's pool_hidden. Last-token poolings (last, rank) need
// only the last row, so they keep the longest prefix the slot has cached (a rerank's shared query is
// decoded once); the others decode every token. Afterwards the sequence holds the tokens' K/V and
// `slot_cache` is `tokens`, so a later request can reuse them as a prefix. Throws Error (the caller drops
// the sequence) if the engine refuses the batch.
// `n_reused` (optional) receives how many of `tokens` came from the cache, not decoded.
std::vector<float> embed_tokens(Engine& eng, int32_t seq, std::vector<int32_t>& slot_cache,
                                const std::vector<int32_t>& tokens, Pooling pooling, int32_t* n_reused = nullptr);

}  // namespace bee::runtime
