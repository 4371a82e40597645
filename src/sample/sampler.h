// sample/sampler: the sampler chain (logit bias -> penalties -> [top-n-sigma] -> top-k -> [typical] -> top-p
// -> min-p -> [XTC] -> temperature [dynamic] -> draw), seeded; the bracketed steps only when switched on.
#pragma once
#include <cstdint>
#include <deque>
#include <random>
#include <utility>
#include <vector>

namespace bee {

// Defaults are llama-cli's.
struct SamplingParams {
    float temp = 0.8f;            // <= 0: greedy (argmax, ties to the lowest id)
    int32_t top_k = 40;           // <= 0: off
    float top_p = 0.95f;          // >= 1: off
    float min_p = 0.05f;          // <= 0: off; >= 1: only the tokens tied at the max
    float repeat_penalty = 1.0f;  // 1: off
    int32_t repeat_last_n = 64;   // window for all penalties; 0: off, -1: whole history
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    uint64_t seed = 0xFFFFFFFFu;  // 0xFFFFFFFF (llama's LLAMA_DEFAULT_SEED): random seed
    // Added to a token's logit before everything else (-inf: never drawn). Ids must be < n_vocab.
    std::vector<std::pair<int32_t, float>> logit_bias;
    // llama.cpp's further samplers (sampler_extended.cpp), each off at its default.
    float top_n_sigma = -1.0f;       // > 0: keep logits >= max - n·σ (σ: std of the finite logits)
    float typical_p = 1.0f;          // < 1: locally typical sampling
    float xtc_probability = 0.0f;    // > 0: with this chance, drop the likeliest tokens above xtc_threshold
    float xtc_threshold = 0.1f;      //      (all but the least likely of them; off above 0.5)
    float dynatemp_range = 0.0f;     // > 0: temperature in temp ± range by the candidates' normalized entropy
    float dynatemp_exponent = 1.0f;
    int32_t min_keep = 0;            // top-k / typical / top-p / min-p / XTC keep at least this many
    // Mirostat 2.0 (0: off; 2: on; version 1 is not implemented): replaces top-k ... XTC. Tokens whose
    // surprise -log2 p (after temperature) exceeds mu go; mu starts at 2·tau and moves by eta toward the
    // target surprise tau after each accepted token.
    int32_t mirostat = 0;
    float mirostat_tau = 5.0f;
    float mirostat_eta = 0.1f;
    // Whether any of the samplers above is on (then the chain runs in full on a sorted candidate list).
    bool extended() const {
        return top_n_sigma > 0 || typical_p < 1 || (xtc_probability > 0 && xtc_threshold <= 0.5f) ||
               dynatemp_range > 0 || min_keep > 1 || mirostat != 0;
    }
};

struct TokenProb {
    int32_t id;
    float p;
};

class Sampler {
public:
    // Throws Error if n_vocab <= 0.
    Sampler(const SamplingParams& params, int32_t n_vocab);

    // Picks the next token from raw logits (n_vocab floats). Does not record it: call accept().
    // Same as apply(logits) followed by draw(candidates()).
    int32_t sample(const float* logits);
    // Records a token in the penalty window (prompt tokens too, as llama.cpp does).
    void accept(int32_t token);
    // Clears the penalty window and the candidates and re-seeds the generator with seed().
    void reset();

    // Runs the whole chain on raw logits without drawing; the result is candidates().
    void apply(const float* logits);
    // Draws one id from a normalized distribution with this sampler's generator.
    int32_t draw(const std::vector<TokenProb>& dist);
    // A uniform double in [0, 1) from this sampler's generator (53 bits; the same on every platform).
    double uniform();

    // Probabilities after the whole chain for the last sample()/apply() call (for logprobs and spec/).
    // Greedy: one entry {argmax, 1}. Sorted by descending p (ties: lower id) when top-k or top-p ran,
    // else in id order (see candidates_sorted()). Tokens filtered out are absent (p = 0).
    const std::vector<TokenProb>& candidates() const { return cur_; }
    bool candidates_sorted() const { return sorted_; }
    // p of `id` in candidates(), 0 if filtered out (linear scan).
    float prob_of(int32_t id) const;

    const SamplingParams& params() const { return params_; }
    uint64_t seed() const { return seed_; }
    int32_t n_vocab() const { return n_vocab_; }

private:
    struct Cand {
        int32_t id;
        float logit;
    };
    int32_t load(const float* logits);
    bool apply_penalties();
    void keep_only(int32_t id);
    void select_top(size_t k);
    void cut_top_p_min_p(float max_l, bool top_k_ran);
    bool cut_top_p(float max_l, double total);
    void apply_extended(float max_l, float temp);  // sampler_extended.cpp
    void apply_mirostat(float temp);               // sampler_extended.cpp
    void accept_mirostat(int32_t token);

    SamplingParams params_;
    int32_t n_vocab_;
    uint64_t seed_;
    std::mt19937 rng_;
    std::deque<int32_t> history_;  // last repeat_last_n accepted tokens, oldest first
    std::vector<float> buf_;       // (n_vocab) sanitized, penalized logits of the current call
    std::vector<Cand> work_;       // surviving candidates, best first when sorted_
    std::vector<TokenProb> cur_;
    bool sorted_ = false;
    float mu_ = 0.0f;               // mirostat's surprise cap (bits)
    bool mirostat_pending_ = false;  // cur_ is a mirostat distribution that no accept() has used yet
};

// Index of the largest value, lowest index on ties; NaN never wins; -1 if n <= 0.
int32_t argmax(const float* x, int32_t n);

}  // namespace bee
