// sample/sampler: the sampler chain (penalties -> top-k -> top-p -> min-p -> temperature -> draw), seeded.
#pragma once
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace bee {

// Defaults are llama-cli's.
struct SamplingParams {
    float temp = 0.8f;            // <= 0: greedy (argmax, ties to the lowest id)
    int32_t top_k = 40;           // <= 0: off
    float top_p = 0.95f;          // >= 1: off
    float min_p = 0.05f;          // <= 0: off
    float repeat_penalty = 1.0f;  // 1: off
    int32_t repeat_last_n = 64;   // window for all penalties; 0: off, -1: whole history
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    uint64_t seed = 0xFFFFFFFFu;  // 0xFFFFFFFF (llama's LLAMA_DEFAULT_SEED): random seed
};

struct TokenProb {
    int32_t id;
    float p;
};

class Sampler {
public:
    Sampler(const SamplingParams& params, int32_t n_vocab);

    // Picks the next token from raw logits (n_vocab floats). Does not record it: call accept().
    int32_t sample(const float* logits);
    // Records a token in the penalty window (prompt tokens too, as llama.cpp does).
    void accept(int32_t token);
    void reset();

    // Probabilities after the whole chain for the last sample() call (for logprobs and spec/).
    const std::vector<TokenProb>& candidates() const { return cur_; }
    const SamplingParams& params() const { return params_; }
    uint64_t seed() const { return seed_; }

private:
    SamplingParams params_;
    int32_t n_vocab_;
    uint64_t seed_;
    std::mt19937 rng_;
    std::deque<int32_t> history_;
    std::vector<TokenProb> cur_;
};

// Index of the largest value, lowest index on ties.
int32_t argmax(const float* x, int32_t n);

}  // namespace bee
