// model/pooling: embeddings from a sequence's final hidden states, as llama.cpp's pooling makes them
// (output norm, then none / mean / cls / last / rank), and the classification head rerankers carry.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"

namespace bee {

class Model;

// llama.cpp's llama_pooling_type values (the GGUF key <arch>.pooling_type holds them).
enum class Pooling { unspecified = -1, none = 0, mean = 1, cls = 2, last = 3, rank = 4 };

// "none" | "mean" | "cls" | "last" | "rank"; throws Error naming `where` otherwise.
Pooling parse_pooling(const std::string& name, const char* where);
const char* pooling_name(Pooling p);

// True if the model has a classification head (cls.weight and/or cls.output.weight) for rank pooling.
bool has_rank_head(const Model& m);
// Values one pooled row holds: n_embd, or under rank pooling the head's outputs.
int pooled_width(const Model& m, Pooling p);

// Pools the hidden states `hidden` (n_tokens, n_embd), taken before the output norm (layer n_layer of
// DecodeOutput::hidden), of one sequence whose tokens sit at positions 0..n_tokens-1. Every row is first
// normalized by the output norm (llama.cpp's embeddings are `result_norm`). Returns (rows, width):
// none: every token's row; mean: their average; cls: the first token's; last: the last token's;
// rank: the head on the last token (the models here are causal decoders; llama.cpp's causal reranker,
// qwen3, reads its last token too): tanh(cls · h + cls.bias), then cls.output (+ bias), softmax where the
// architecture asks for it (HParams::rank_softmax). Throws Error for rank on a model without a head.
std::vector<float> pool_hidden(const Model& m, ThreadPool& pool, const float* hidden, int n_tokens, Pooling p);

}  // namespace bee
