// sample/sampler: the sampler chain (logit bias -> penalties -> [DRY] -> [top-n-sigma] -> top-k -> [typical]
// -> top-p -> min-p -> [XTC] -> temperature [dynamic] -> draw), seeded; the bracketed steps only when
// switched on. The steps between logit bias and draw may be reordered (llama.cpp's `samplers`).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace bee {

// The reorderable steps of the chain, with llama.cpp's names (sampler_order.cpp).
enum class SamplerStep : uint8_t { penalties, dry, top_n_sigma, top_k, typical, top_p, min_p, xtc, temperature };

// The default order: penalties, dry, top_n_sigma, top_k, typical, top_p, min_p, xtc, temperature.
const std::vector<SamplerStep>& default_sampler_order();
// llama.cpp's `samplers` / `--samplers`: names separated by ';' (or given one by one), e.g.
// "top_k;temperature", aliases such as "top-k", "nucleus", "temp" accepted; or, when `text` has no ';' and
// is not a name, one letter per step ("kt": e penalties, d dry, s top_n_sigma, k top_k, y typical, p top_p,
// m min_p, x xtc, t temperature). A step may repeat (each runs where it stands). Throws Error naming a bad
// entry (llama.cpp skips unknown names silently).
std::vector<SamplerStep> parse_sampler_order(const std::string& text);
std::vector<SamplerStep> parse_sampler_order(const std::vector<std::string>& names);
std::string sampler_order_name(const std::vector<SamplerStep>& order);  // "penalties;dry;...", for logs and /props

// What ends a repeat for DRY: text (llama.cpp's dry_sequence_breakers) and the token texts to find it in.
struct DryBreakers {
    std::vector<std::string> strings;
    std::function<std::string(int32_t)> piece;  // token id -> its text
};

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
    float top_n_sigma = -1.0f;     // > 0: keep logits >= max - n·σ (σ: std of the finite logits)
    float typical_p = 1.0f;        // < 1: locally typical sampling
    float xtc_probability = 0.0f;  // > 0: with this chance, drop the likeliest tokens above xtc_threshold
    float xtc_threshold = 0.1f;    //      (all but the least likely of them; off above 0.5)
    float dynatemp_range = 0.0f;   // > 0: temperature in temp ± range by the candidates' normalized entropy
    float dynatemp_exponent = 1.0f;
    int32_t min_keep = 0;  // top-k / typical / top-p / min-p / XTC keep at least this many
    // Mirostat (0: off; 1: Mirostat; 2: Mirostat 2.0): replaces top-k ... XTC and the order. mu starts at
    // 2·tau and moves by eta toward the target surprise tau after each accepted token. Version 2 drops the
    // tokens whose surprise -log2 p (after temperature) exceeds mu; version 1 keeps the top k, k estimated
    // from mu and the Zipf exponent of the 100 likeliest tokens.
    int32_t mirostat = 0;
    float mirostat_tau = 5.0f;
    float mirostat_eta = 0.1f;
    // DRY (sampler_dry.cpp): a token that would continue a repeat of n >= dry_allowed_length earlier tokens
    // loses dry_multiplier · dry_base^(n - dry_allowed_length) from its logit. A repeat never spans a
    // breaker's text. dry_penalty_last_n: how far back repeats are looked for (-1: everything, 0: off).
    float dry_multiplier = 0.0f;  // > 0: on
    float dry_base = 1.75f;
    int32_t dry_allowed_length = 2;
    int32_t dry_penalty_last_n = -1;
    std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
    // The breakers with the vocabulary's texts (bind_dry_breakers); the Sampler refuses DRY with breakers
    // that are not bound.
    std::shared_ptr<const DryBreakers> dry_breakers;
    std::vector<SamplerStep> order;  // empty: default_sampler_order()
    bool dry_on() const { return dry_multiplier > 0 && dry_penalty_last_n != 0; }
    bool custom_order() const { return !order.empty() && order != default_sampler_order(); }
    // Whether any of the samplers above is on (then the chain runs in full on a sorted candidate list).
    bool extended() const {
        return top_n_sigma > 0 || typical_p < 1 || (xtc_probability > 0 && xtc_threshold <= 0.5f) ||
               dynatemp_range > 0 || min_keep > 1 || mirostat != 0 || custom_order();
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
    void apply_extended(float temp);   // sampler_extended.cpp
    void apply_mirostat(float temp);   // sampler_extended.cpp
    void apply_mirostat1(float temp);  // sampler_extended.cpp
    void accept_mirostat(int32_t token);
    // DRY's penalty per token for the current history (sampler_dry.cpp); empty when none applies.
    std::vector<std::pair<int32_t, float>> dry_penalties() const;
    size_t dry_breaker_free_tail(size_t limit) const;
    // The penalties / DRY steps before the first filter of the order (all of them if `all`), on buf_;
    // returns whether any logit changed.
    bool apply_leading_steps(bool all);

    SamplingParams params_;
    int32_t n_vocab_;
    uint64_t seed_;
    std::mt19937 rng_;
    std::deque<int32_t> history_;       // last repeat_last_n accepted tokens, oldest first
    std::vector<int32_t> dry_history_;  // DRY's window: up to dry_penalty_last_n accepted tokens (all if -1)
    size_t leading_ = 0;                // steps of order_ that apply_leading_steps() ran before any filter
    std::vector<SamplerStep> order_;    // params_.order or the default
    std::vector<float> buf_;            // (n_vocab) sanitized, penalized logits of the current call
    std::vector<Cand> work_;            // surviving candidates, best first when sorted_
    std::vector<TokenProb> cur_;
    bool sorted_ = false;
    float mu_ = 0.0f;                // mirostat's surprise cap (bits)
    bool mirostat_pending_ = false;  // cur_ is a mirostat distribution that no accept() has used yet
};

// Sets p.dry_breakers from p.dry_sequence_breakers and the vocabulary's token texts (null when DRY is off or
// there are no breakers). Call it where the tokenizer is known, after the DRY fields are final.
void bind_dry_breakers(SamplingParams& p, std::function<std::string(int32_t)> piece);

// Index of the largest value, lowest index on ties; NaN never wins; -1 if n <= 0.
int32_t argmax(const float* x, int32_t n);

}  // namespace bee
