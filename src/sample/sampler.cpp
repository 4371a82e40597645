// sample/sampler: llama.cpp's default chain (logit bias, penalties, DRY, top-k, top-p, min-p, temp, dist) over
// raw logits; with llama.cpp's further samplers switched on or another order, the full chain in
// sampler_extended.cpp.
#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <limits>

#include "base/error.h"

namespace bee {

namespace {

constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;

// Higher logit first, lower id on ties: a strict total order, so results never depend on the sort.
template <typename T>
bool higher(const T& a, const T& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

void seed_rng(std::mt19937& rng, uint64_t seed) {
    if (seed <= 0xFFFFFFFFu) {
        rng.seed(static_cast<uint32_t>(seed));  // same stream as std::mt19937(seed) elsewhere
    } else {
        std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
        rng.seed(seq);
    }
}

}  // namespace

// note: the logits of a row are scanned once per sampled token (49,152 of them on SmolLM2, every row of a
// server step or verify batch): each block of 64 keeps 16 lane maxima with SSE2 (x86-64's baseline, so
// every CPU Bee runs on), and only the first block holding the overall maximum is searched for its index.
// maxps(v, m) returns m when v is NaN, the same as `v > m ? v : m`, so NaN never wins. The element-by-
// element loop this replaces was a chain of dependent compares (~2% of a server step of 8 rows).
namespace {

constexpr int kBlock = 64;

// Largest non-NaN value of x[0..kBlock) (-inf if none); *nan set when any is NaN.
inline float block_max(const float* x, bool* nan) {
    __m128 m[4], un = _mm_setzero_ps();
    for (int l = 0; l < 4; l++) m[l] = _mm_set1_ps(-std::numeric_limits<float>::infinity());
    for (int j = 0; j < kBlock; j += 16)
        for (int l = 0; l < 4; l++) {
            const __m128 v = _mm_loadu_ps(x + j + 4 * l);
            m[l] = _mm_max_ps(v, m[l]);
            un = _mm_or_ps(un, _mm_cmpunord_ps(v, v));
        }
    if (_mm_movemask_ps(un)) *nan = true;
    // lanes hold no NaN, so the order of these maxima does not matter
    __m128 r = _mm_max_ps(_mm_max_ps(m[0], m[1]), _mm_max_ps(m[2], m[3]));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r = _mm_max_ss(r, _mm_shuffle_ps(r, r, 1));
    return _mm_cvtss_f32(r);
}

// argmax (lowest index on ties, NaN never wins) that also reports whether x holds a NaN.
int32_t argmax_scan(const float* x, int32_t n, bool* nan) {
    if (n <= 0) return -1;
    float best_v = -std::numeric_limits<float>::infinity();
    int32_t best = -1, best_block = -1, i = 0;
    for (; i + kBlock <= n; i += kBlock) {
        const float bm = block_max(x + i, nan);
        if (bm > best_v) best_v = bm, best_block = i;
    }
    for (; i < n; i++) {  // the tail, after every block: strictly greater keeps the lowest index
        if (x[i] > best_v) best_v = x[i], best = i;
        else if (x[i] != x[i]) *nan = true;
    }
    if (best < 0 && best_block >= 0)
        for (int32_t k = best_block; best < 0; k++)
            if (x[k] == best_v) best = k;
    if (best < 0) {  // nothing above -inf: the first value that is not NaN (the last if all are)
        best = 0;
        while (best < n - 1 && std::isnan(x[best])) best++;
    }
    return best;
}

}  // namespace

int32_t argmax(const float* x, int32_t n) {
    bool nan = false;
    return argmax_scan(x, n, &nan);
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab) : params_(params), n_vocab_(n_vocab) {
    if (n_vocab <= 0) fail("sampler: n_vocab must be > 0 (got %d)", n_vocab);
    if (std::isnan(params.temp) || std::isnan(params.top_p) || std::isnan(params.min_p) ||
        std::isnan(params.frequency_penalty) || std::isnan(params.presence_penalty)) {
        fail("sampler: NaN sampling parameter");
    }
    for (float v : {params.top_n_sigma, params.typical_p, params.xtc_probability, params.xtc_threshold,
                    params.dynatemp_range, params.dynatemp_exponent})
        if (std::isnan(v)) fail("sampler: NaN sampling parameter");
    if (params.dynatemp_exponent <= 0.0f)
        fail("sampler: dynatemp exponent must be > 0 (got %g)", params.dynatemp_exponent);
    if (params.mirostat < 0 || params.mirostat > 2)
        fail("sampler: mirostat %d: use 0 (off), 1 (Mirostat) or 2 (Mirostat 2.0)", params.mirostat);
    if (params.mirostat != 0 && !(params.mirostat_tau > 0.0f && params.mirostat_eta >= 0.0f))
        fail("sampler: mirostat needs tau > 0 and eta >= 0 (got %g, %g)", params.mirostat_tau, params.mirostat_eta);
    mu_ = 2.0f * params.mirostat_tau;
    if (std::isnan(params.dry_multiplier) || !(params.dry_base >= 1.0f) || params.dry_allowed_length < 0 ||
        params.dry_penalty_last_n < -1)
        fail(
            "sampler: DRY needs multiplier >= 0, base >= 1, allowed length >= 0 and penalty_last_n >= -1 (got %g, "
            "%g, %d, %d)",
            params.dry_multiplier, params.dry_base, params.dry_allowed_length, params.dry_penalty_last_n);
    if (params.dry_on() && !params.dry_breakers && !params.dry_sequence_breakers.empty())
        fail("sampler: DRY sequence breakers are not bound to the vocabulary (bind_dry_breakers)");
    // Mirostat replaces the filters and their order; penalties and DRY still come first.
    order_ = params.order.empty() || params.mirostat != 0 ? default_sampler_order() : params.order;
    if (!(params.repeat_penalty > 0.0f)) {
        fail("sampler: repeat_penalty must be > 0 (got %g)", params.repeat_penalty);
    }
    for (const auto& [id, bias] : params.logit_bias) {
        if (id < 0 || id >= n_vocab)
            fail("sampler: logit bias for token %d, outside the vocabulary [0, %d)", id, n_vocab);
        if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity())
            fail("sampler: logit bias %g for token %d (use a finite number, or -inf to ban the token)", bias, id);
    }
    seed_ = params.seed;
    if (seed_ == kRandomSeed) {
        std::random_device rd;
        do {
            seed_ = rd();
        } while (seed_ == kRandomSeed);
    }
    seed_rng(rng_, seed_);
    work_.reserve(static_cast<size_t>(n_vocab));
}

void Sampler::accept(int32_t token) {
    if (mirostat_pending_) accept_mirostat(token);
    if (params_.dry_on() && token >= 0 && token < n_vocab_) {
        dry_history_.push_back(token);
        const int32_t window = params_.dry_penalty_last_n;
        if (window > 0 && dry_history_.size() > (size_t)window)
            dry_history_.erase(dry_history_.begin(), dry_history_.end() - window);
    }
    const int32_t window = params_.repeat_last_n;
    if (window == 0 || token < 0 || token >= n_vocab_) return;
    history_.push_back(token);
    if (window > 0) {
        while (history_.size() > static_cast<size_t>(window)) history_.pop_front();
    }
}

void Sampler::reset() {
    mu_ = 2.0f * params_.mirostat_tau;
    mirostat_pending_ = false;
    history_.clear();
    dry_history_.clear();
    cur_.clear();
    sorted_ = false;
    seed_rng(rng_, seed_);
}

// buf_ = the logits, NaN as -inf (so every order stays total) and +inf as the largest float (so that
// logit - max stays finite). Returns the argmax. note: one pass in the common case (all finite).
int32_t Sampler::load(const float* logits) {
    constexpr float kMax = std::numeric_limits<float>::max();
    buf_.resize(static_cast<size_t>(n_vocab_));
    float* b = buf_.data();
    memcpy(b, logits, sizeof(float) * (size_t)n_vocab_);
    for (const auto& [id, bias] : params_.logit_bias) b[id] += bias;
    bool special = false;
    const int32_t best = argmax_scan(b, n_vocab_, &special);
    if (!special && b[best] <= kMax) return best;
    for (int32_t i = 0; i < n_vocab_; i++) {
        b[i] = std::isnan(b[i]) ? -std::numeric_limits<float>::infinity() : std::min(b[i], kMax);
    }
    return argmax(b, n_vocab_);
}

// llama.cpp's penalties sampler: for each distinct token in the window with count c,
// logit = logit > 0 ? logit / repeat : logit * repeat; logit -= c * frequency + (c > 0) * presence.
// Returns whether any logit changed.
bool Sampler::apply_penalties() {
    const SamplingParams& p = params_;
    if (history_.empty()) return false;
    if (p.repeat_penalty == 1.0f && p.frequency_penalty == 0.0f && p.presence_penalty == 0.0f) return false;
    std::vector<int32_t> window(history_.begin(), history_.end());  // note: <= repeat_last_n tokens, cheap
    std::sort(window.begin(), window.end());
    for (size_t i = 0; i < window.size();) {
        size_t j = i;
        while (j < window.size() && window[j] == window[i]) j++;
        const float count = static_cast<float>(j - i);
        float& l = buf_[window[i]];
        l = l > 0.0f ? l / p.repeat_penalty : l * p.repeat_penalty;
        l -= count * p.frequency_penalty + p.presence_penalty;
        i = j;
    }
    return true;
}

// The point mass on one token (greedy and the degenerate cases).
void Sampler::keep_only(int32_t best) {
    cur_.assign(1, {best, 1.0f});
    sorted_ = true;
}

// work_ = the k best of buf_, best first. note: a heap of k whose front is the worst kept; most tokens
// are rejected by one compare with it, so top-k costs about one pass over the vocab.
void Sampler::select_top(size_t k) {
    const size_t n = buf_.size();
    work_.clear();
    for (size_t i = 0; i < k; i++) work_.push_back({static_cast<int32_t>(i), buf_[i]});
    std::make_heap(work_.begin(), work_.end(), higher<Cand>);
    for (size_t i = k; i < n; i++) {
        if (buf_[i] > work_.front().logit) {  // a tie loses: its id is higher than every kept one
            std::pop_heap(work_.begin(), work_.end(), higher<Cand>);
            work_.back() = {static_cast<int32_t>(i), buf_[i]};
            std::push_heap(work_.begin(), work_.end(), higher<Cand>);
        }
    }
    std::sort_heap(work_.begin(), work_.end(), higher<Cand>);
}

// top-p then min-p. min-p keeps p_i >= min_p * p_max, i.e. logit_i >= max + log(min_p): like top-p's,
// its survivors are a prefix of the sorted order, so the chain keeps the shorter prefix, and filtering
// min-p first only shrinks the work. top-p uses the denominator of the whole distribution after top-k.
void Sampler::cut_top_p_min_p(float max_l, bool top_k_ran) {
    const SamplingParams& p = params_;
    const float threshold =  // min_p >= 1 keeps the tokens tied at the max, never none
        p.min_p > 0.0f ? max_l + std::log(std::min(p.min_p, 1.0f)) : -std::numeric_limits<float>::infinity();
    if (top_k_ran) {  // work_ is sorted: both filters are prefixes of it
        double total = 0.0;
        for (const Cand& c : work_) total += std::exp(c.logit - max_l);
        while (work_.back().logit < threshold) work_.pop_back();  // the max always stays
        if (p.top_p < 1.0f) cut_top_p(max_l, total);
        return;
    }
    if (p.top_p >= 1.0f) {  // min-p alone (or nothing): survivors stay in id order
        work_.clear();
        for (int32_t i = 0; i < n_vocab_; i++) {
            if (buf_[i] >= threshold) work_.push_back({i, buf_[i]});
        }
        return;
    }

    // top-p without top-k. note: instead of sorting the vocab, tokens go into buckets of 1/4 logit below
    // the max (the last bucket takes everything 32 or more below); only the buckets down to the one where
    // the cumulative mass reaches top_p (plus one for rounding) are collected and sorted.
    constexpr int kBuckets = 128;
    constexpr float kPerUnit = 4.0f;
    double mass[kBuckets] = {};
    double total = 0.0;
    auto bucket_of = [](float d) {  // d = max - logit >= 0
        return d < (kBuckets - 1) / kPerUnit ? static_cast<int>(d * kPerUnit) : kBuckets - 1;
    };
    for (int32_t i = 0; i < n_vocab_; i++) {
        const float l = buf_[i];
        const float e = std::exp(l - max_l);
        total += e;
        if (l >= threshold) mass[bucket_of(max_l - l)] += e;
    }
    int last = kBuckets - 1;
    double cum = 0.0;
    for (int b = 0; b < kBuckets; b++) {
        cum += mass[b];
        if (cum >= p.top_p * total) {
            last = std::min(b + 1, kBuckets - 1);
            break;
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        work_.clear();
        for (int32_t i = 0; i < n_vocab_; i++) {
            const float l = buf_[i];
            if (l >= threshold && bucket_of(max_l - l) <= last) work_.push_back({i, l});
        }
        std::sort(work_.begin(), work_.end(), higher<Cand>);
        if (cut_top_p(max_l, total) || last == kBuckets - 1) return;
        last = kBuckets - 1;  // rounding left the cut outside the collected buckets: take them all
    }
}

// llama.cpp's top-p on the sorted work_: the smallest prefix whose cumulative probability reaches top_p.
// Returns false (work_ untouched) if the whole of work_ does not reach it.
bool Sampler::cut_top_p(float max_l, double total) {
    double cum = 0.0;
    for (size_t i = 0; i < work_.size(); i++) {
        cum += std::exp(work_[i].logit - max_l) / total;
        if (cum >= params_.top_p) {
            work_.resize(i + 1);
            return true;
        }
    }
    return false;
}

void Sampler::apply(const float* logits) {
    const SamplingParams& p = params_;
    mirostat_pending_ = false;
    const float inv_t = 1.0f / p.temp;
    const bool greedy = p.temp <= 0.0f || !std::isfinite(inv_t);
    const bool penalties =
        !history_.empty() && (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f);
    const bool dry = p.dry_on() && dry_history_.size() >= 2;
    if (greedy && !penalties && !dry && p.logit_bias.empty()) {  // the logits in place: no copy per row
        bool special = false;
        const int32_t best = argmax_scan(logits, n_vocab_, &special);
        if (!special && logits[best] <= std::numeric_limits<float>::max()) {
            keep_only(best);
            return;
        }
    }
    int32_t best = load(logits);
    if (apply_leading_steps(greedy)) best = argmax(buf_.data(), n_vocab_);
    cur_.clear();

    if (greedy) {  // (or 1/temp overflows: the limit is greedy)
        keep_only(best);
        return;
    }
    const float max_l = buf_[best];
    if (max_l == -std::numeric_limits<float>::infinity()) {  // nothing finite: the lowest id
        keep_only(best);
        return;
    }
    if (p.mirostat == 2) return apply_mirostat(p.temp);
    if (p.mirostat == 1) return apply_mirostat1(p.temp);
    if (p.extended()) return apply_extended(p.temp);  // (a custom order included)
    const bool top_k_ran = p.top_k > 0 && p.top_k < n_vocab_;
    if (top_k_ran) select_top(static_cast<size_t>(p.top_k));
    cut_top_p_min_p(max_l, top_k_ran);
    sorted_ = top_k_ran || p.top_p < 1.0f;

    // temperature, then softmax over the survivors (never empty: the max passes every filter).
    cur_.resize(work_.size());
    double sum = 0.0;
    for (size_t i = 0; i < work_.size(); i++) {
        const float e = std::exp((work_[i].logit - max_l) * inv_t);
        cur_[i] = {work_[i].id, e};
        sum += e;
    }
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (TokenProb& t : cur_) t.p *= inv_sum;
}

double Sampler::uniform() {
    const uint64_t a = rng_() >> 5;  // 27 bits
    const uint64_t b = rng_() >> 6;  // 26 bits
    return static_cast<double>((a << 26) | b) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::draw(const std::vector<TokenProb>& dist) {
    if (dist.empty()) return -1;
    if (dist.size() == 1) return dist[0].id;
    const double u = uniform();
    double cum = 0.0;
    int32_t last = dist[0].id;
    for (const TokenProb& t : dist) {
        if (t.p <= 0.0f) continue;
        cum += t.p;
        last = t.id;
        if (u < cum) return t.id;
    }
    return last;  // rounding left cum just below u: the last token with p > 0
}

int32_t Sampler::sample(const float* logits) {
    apply(logits);
    if (cur_.size() == 1) return cur_[0].id;  // greedy or a single survivor: no draw, rng untouched
    return draw(cur_);
}

float Sampler::prob_of(int32_t id) const {
    for (const TokenProb& t : cur_) {
        if (t.id == id) return t.p;
    }
    return 0.0f;
}

}  // namespace bee
