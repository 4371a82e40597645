// sample/sampler_extended: the full chain when one of llama.cpp's further samplers is on (top-n-sigma,
// locally typical, XTC, dynamic temperature, min_keep), in llama.cpp's order: top-n-sigma, top-k, typical,
// top-p, min-p, XTC, temperature; and Mirostat 2.0, which replaces those filters (temperature, then the
// surprise cap). Unlike the default chain's shortcuts, every step works on an explicit
// candidate list sorted by logit (higher first, lower id on ties); probabilities are renormalized over the
// survivors before each step that reads them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "sample/sampler.h"

namespace bee {

namespace {

template <typename T>
bool higher_logit(const T& a, const T& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Softmax of the candidates' logits at temperature 1 (max first: cand is sorted).
template <typename C>
std::vector<double> probs_of(const std::vector<C>& cand) {
    std::vector<double> p(cand.size());
    double sum = 0.0;
    for (size_t i = 0; i < cand.size(); i++) sum += p[i] = std::exp((double)cand[i].logit - cand[0].logit);
    for (double& x : p) x /= sum;
    return p;
}

}  // namespace

void Sampler::apply_extended(float max_l, float temp) {
    const SamplingParams& p = params_;
    const size_t keep = (size_t)std::max(p.min_keep, 1);
    work_.clear();
    for (int32_t i = 0; i < n_vocab_; i++)
        if (buf_[i] > -std::numeric_limits<float>::infinity()) work_.push_back({i, buf_[i]});

    if (p.top_n_sigma > 0 && work_.size() > 1) {  // logits below max - n·σ go (σ over the finite logits)
        double mean = 0.0, var = 0.0;
        for (const Cand& c : work_) mean += c.logit;
        mean /= (double)work_.size();
        for (const Cand& c : work_) var += (c.logit - mean) * (c.logit - mean);
        const double cut = max_l - p.top_n_sigma * std::sqrt(var / (double)work_.size());
        work_.erase(std::remove_if(work_.begin(), work_.end(), [cut](const Cand& c) { return c.logit < cut; }),
                    work_.end());
    }
    std::sort(work_.begin(), work_.end(), higher_logit<Cand>);
    if (p.top_k > 0 && work_.size() > std::max((size_t)p.top_k, keep)) work_.resize(std::max((size_t)p.top_k, keep));

    if (p.typical_p < 1.0f && work_.size() > 1) {  // keep the tokens whose surprise is closest to the entropy
        const std::vector<double> pr = probs_of(work_);
        double entropy = 0.0;
        for (double x : pr)
            if (x > 0) entropy -= x * std::log(x);
        std::vector<size_t> order(work_.size());
        std::iota(order.begin(), order.end(), 0);
        auto shift = [&](size_t i) { return pr[i] > 0 ? std::fabs(-std::log(pr[i]) - entropy) : INFINITY; };
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return shift(a) < shift(b); });
        double cum = 0.0;
        size_t n = order.size();
        for (size_t i = 0; i < order.size(); i++) {
            cum += pr[order[i]];
            if (cum > p.typical_p && i + 1 >= keep) {
                n = i + 1;
                break;
            }
        }
        std::vector<Cand> kept;
        for (size_t i = 0; i < n; i++) kept.push_back(work_[order[i]]);
        std::sort(kept.begin(), kept.end(), higher_logit<Cand>);
        work_.swap(kept);
    }
    if (p.top_p < 1.0f && work_.size() > 1) {
        const std::vector<double> pr = probs_of(work_);
        double cum = 0.0;
        for (size_t i = 0; i < pr.size(); i++) {
            cum += pr[i];
            if (cum >= p.top_p && i + 1 >= keep) {
                work_.resize(i + 1);
                break;
            }
        }
    }
    if (p.min_p > 0.0f && work_.size() > 1) {  // p_i >= min_p · p_max, i.e. logit_i >= max + ln(min_p)
        const float cut = work_[0].logit + std::log(std::min(p.min_p, 1.0f));
        size_t n = 1;
        while (n < work_.size() && (work_[n].logit >= cut || n < keep)) n++;
        work_.resize(n);
    }
    if (p.xtc_probability > 0 && p.xtc_threshold <= 0.5f && work_.size() > 1 && uniform() < p.xtc_probability) {
        // exclude the top choices: of the tokens at or above the threshold, all but the least likely go
        const std::vector<double> pr = probs_of(work_);
        size_t last = 0;
        while (last + 1 < pr.size() && pr[last + 1] >= p.xtc_threshold) last++;
        if (last >= 1 && work_.size() - last >= keep)
            work_.erase(work_.begin(), work_.begin() + (std::ptrdiff_t)last);
    }
    if (p.dynatemp_range > 0 && work_.size() > 1) {  // entropy 0 -> temp - range, maximal -> temp + range
        const std::vector<double> pr = probs_of(work_);
        double entropy = 0.0;
        for (double x : pr)
            if (x > 0) entropy -= x * std::log(x);
        const double lo = std::max(0.0f, temp - p.dynatemp_range), hi = temp + p.dynatemp_range;
        temp = (float)(lo + (hi - lo) * std::pow(entropy / std::log((double)work_.size()), p.dynatemp_exponent));
    }

    // temperature, then softmax over the survivors (the best one always survives)
    cur_.resize(work_.size());
    if (!(temp > 0.0f)) {  // a dynamic temperature of 0: the best one
        keep_only(work_[0].id);
        return;
    }
    const double inv_t = 1.0 / temp;
    double sum = 0.0;
    std::vector<double> e(work_.size());
    for (size_t i = 0; i < work_.size(); i++) sum += e[i] = std::exp((work_[i].logit - work_[0].logit) * inv_t);
    for (size_t i = 0; i < work_.size(); i++) cur_[i] = {work_[i].id, (float)(e[i] / sum)};
    sorted_ = true;
}

// Mirostat 2.0 (Basu et al.), as llama.cpp: softmax at the temperature, drop the tokens whose surprise
// -log2 p exceeds mu (the likeliest always stays), renormalize. accept() then moves mu by eta toward tau
// using the accepted token's surprise in this distribution.
void Sampler::apply_mirostat(float temp) {
    work_.clear();
    for (int32_t i = 0; i < n_vocab_; i++)
        if (buf_[i] > -std::numeric_limits<float>::infinity()) work_.push_back({i, buf_[i] / temp});
    std::sort(work_.begin(), work_.end(), higher_logit<Cand>);
    const std::vector<double> pr = probs_of(work_);
    size_t n = 1;
    while (n < pr.size() && -std::log2(pr[n]) <= mu_) n++;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += pr[i];
    cur_.resize(n);
    for (size_t i = 0; i < n; i++) cur_[i] = {work_[i].id, (float)(pr[i] / sum)};
    sorted_ = true;
    mirostat_pending_ = true;
}

void Sampler::accept_mirostat(int32_t token) {
    mirostat_pending_ = false;
    const float p = prob_of(token);
    if (p <= 0.0f) return;  // a token the distribution did not offer (forced): mu stays
    mu_ -= params_.mirostat_eta * (-std::log2(p) - params_.mirostat_tau);
}

}  // namespace bee
