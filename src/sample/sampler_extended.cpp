// sample/sampler_extended: the full chain when one of llama.cpp's further samplers is on (top-n-sigma,
// locally typical, XTC, dynamic temperature, min_keep) or the order is not the default, and Mirostat 1 and
// 2.0, which replace the filters (temperature, then their own cut). Unlike the default chain's shortcuts,
// every step works on an explicit candidate list, sorted by logit (higher first, lower id on ties) before
// any step that reads ranks or probabilities, which are renormalized over the survivors each time. The
// temperature step divides the logits, so steps after it see the tempered distribution (as in llama.cpp);
// the final softmax is at temperature 1. (A temperature of 0 never gets here: greedy is the argmax after
// logit bias, penalties and DRY, wherever they stand in the order.)
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

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

double entropy_of(const std::vector<double>& pr) {
    double h = 0.0;
    for (double x : pr)
        if (x > 0) h -= x * std::log(x);
    return h;
}

}  // namespace

// The penalties / DRY steps that lead the order (all of them if `all`: greedy ignores the filters), on the
// whole vocabulary in buf_.
bool Sampler::apply_leading_steps(bool all) {
    bool changed = false, leading = true;
    leading_ = 0;
    for (size_t i = 0; i < order_.size(); i++) {
        const SamplerStep s = order_[i];
        if (s == SamplerStep::penalties) {
            changed |= apply_penalties();
        } else if (s == SamplerStep::dry) {
            for (const auto& [id, pen] : dry_penalties()) buf_[id] -= pen, changed = true;
        } else {
            leading = false;
            if (!all) break;
        }
        if (leading) leading_ = i + 1;
    }
    return changed;
}

void Sampler::apply_extended(float temp) {
    const SamplingParams& p = params_;
    const size_t keep = (size_t)std::max(p.min_keep, 1);
    work_.clear();
    for (int32_t i = 0; i < n_vocab_; i++)
        if (buf_[i] > -std::numeric_limits<float>::infinity()) work_.push_back({i, buf_[i]});
    bool sorted = false;
    const auto sort = [&] {
        if (!sorted) std::sort(work_.begin(), work_.end(), higher_logit<Cand>);
        sorted = true;
    };
    const auto shift_logits = [&](const std::unordered_map<int32_t, float>& delta) {  // a later penalty step
        for (Cand& c : work_) {
            auto it = delta.find(c.id);
            if (it != delta.end()) c.logit -= it->second, sorted = false;
        }
    };
    for (size_t step = leading_; step < order_.size() && !work_.empty(); step++) {
        switch (order_[step]) {
            case SamplerStep::penalties: {  // the same rule as apply_penalties(), on the survivors
                if (history_.empty()) break;
                std::unordered_map<int32_t, int> count;
                for (int32_t t : history_) count[t]++;
                for (Cand& c : work_) {
                    auto it = count.find(c.id);
                    if (it == count.end()) continue;
                    float& l = c.logit;
                    l = l > 0.0f ? l / p.repeat_penalty : l * p.repeat_penalty;
                    l -= (float)it->second * p.frequency_penalty + p.presence_penalty;
                    sorted = false;
                }
                break;
            }
            case SamplerStep::dry: {
                std::unordered_map<int32_t, float> delta;
                for (const auto& [id, pen] : dry_penalties()) delta[id] = pen;
                if (!delta.empty()) shift_logits(delta);
                break;
            }
            case SamplerStep::top_n_sigma: {  // logits below max - n·σ go (σ over the survivors' logits)
                if (!(p.top_n_sigma > 0) || work_.size() < 2) break;
                sort();
                double mean = 0.0, var = 0.0;
                for (const Cand& c : work_) mean += c.logit;
                mean /= (double)work_.size();
                for (const Cand& c : work_) var += (c.logit - mean) * (c.logit - mean);
                const double cut = work_[0].logit - p.top_n_sigma * std::sqrt(var / (double)work_.size());
                size_t n = 1;
                while (n < work_.size() && work_[n].logit >= cut) n++;
                work_.resize(n);
                break;
            }
            case SamplerStep::top_k:
                if (p.top_k <= 0) break;
                sort();
                if (work_.size() > std::max((size_t)p.top_k, keep)) work_.resize(std::max((size_t)p.top_k, keep));
                break;
            case SamplerStep::typical: {  // keep the tokens whose surprise is closest to the entropy
                if (!(p.typical_p < 1.0f) || work_.size() < 2) break;
                sort();
                const std::vector<double> pr = probs_of(work_);
                const double entropy = entropy_of(pr);
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
                break;
            }
            case SamplerStep::top_p: {
                if (!(p.top_p < 1.0f) || work_.size() < 2) break;
                sort();
                const std::vector<double> pr = probs_of(work_);
                double cum = 0.0;
                for (size_t i = 0; i < pr.size(); i++) {
                    cum += pr[i];
                    if (cum >= p.top_p && i + 1 >= keep) {
                        work_.resize(i + 1);
                        break;
                    }
                }
                break;
            }
            case SamplerStep::min_p: {  // p_i >= min_p · p_max, i.e. logit_i >= max + ln(min_p)
                if (!(p.min_p > 0.0f) || work_.size() < 2) break;
                sort();
                const float cut = work_[0].logit + std::log(std::min(p.min_p, 1.0f));
                size_t n = 1;
                while (n < work_.size() && (work_[n].logit >= cut || n < keep)) n++;
                work_.resize(n);
                break;
            }
            case SamplerStep::xtc: {  // exclude the top choices: of those at or above the threshold, all but the last
                if (!(p.xtc_probability > 0) || p.xtc_threshold > 0.5f || work_.size() < 2) break;
                if (!(uniform() < p.xtc_probability)) break;
                sort();
                const std::vector<double> pr = probs_of(work_);
                size_t last = 0;
                while (last + 1 < pr.size() && pr[last + 1] >= p.xtc_threshold) last++;
                if (last >= 1 && work_.size() - last >= keep)
                    work_.erase(work_.begin(), work_.begin() + (std::ptrdiff_t)last);
                break;
            }
            case SamplerStep::temperature: {
                float t = temp;
                if (p.dynatemp_range > 0 && work_.size() > 1) {  // entropy 0 -> temp - range, maximal -> + range
                    sort();
                    const double h = entropy_of(probs_of(work_));
                    const double lo = std::max(0.0f, temp - p.dynatemp_range), hi = temp + p.dynatemp_range;
                    t = (float)(lo + (hi - lo) * std::pow(h / std::log((double)work_.size()), p.dynatemp_exponent));
                }
                if (!(t > 0.0f)) {  // a dynamic temperature of 0: only the best one
                    sort();
                    work_.resize(1);
                    break;
                }
                const float inv_t = 1.0f / t;
                for (Cand& c : work_) c.logit *= inv_t;
                break;
            }
        }
    }
    sort();
    if (work_.size() == 1) return keep_only(work_[0].id);
    cur_.resize(work_.size());
    const std::vector<double> pr = probs_of(work_);
    for (size_t i = 0; i < work_.size(); i++) cur_[i] = {work_[i].id, (float)pr[i]};
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

// Mirostat (version 1, Basu et al. 2021, Algorithm 1): assume the sorted probabilities follow Zipf's law
// p_i ∝ i^-s; estimate s from the m = 100 likeliest tokens by least squares on log(p_i / p_i+1) =
// s·log((i+1)/i); keep the top k = ((ε·2^mu) / (1 - N^-ε))^(1/s), ε = s - 1, the k whose expected surprise
// is mu; renormalize. accept() moves mu as in version 2.
void Sampler::apply_mirostat1(float temp) {
    constexpr size_t kM = 100;
    work_.clear();
    for (int32_t i = 0; i < n_vocab_; i++)
        if (buf_[i] > -std::numeric_limits<float>::infinity()) work_.push_back({i, buf_[i] / temp});
    std::sort(work_.begin(), work_.end(), higher_logit<Cand>);
    const std::vector<double> pr = probs_of(work_);
    double sum_tb = 0.0, sum_tt = 0.0;
    for (size_t i = 0; i + 1 < kM && i + 1 < pr.size() && pr[i + 1] > 0; i++) {
        const double t = std::log((double)(i + 2) / (double)(i + 1)), b = std::log(pr[i] / pr[i + 1]);
        sum_tb += t * b;
        sum_tt += t * t;
    }
    size_t n = pr.size();
    if (sum_tt > 0) {
        const double s = sum_tb / sum_tt, eps = s - 1.0;
        const double k = std::pow(eps * std::pow(2.0, (double)mu_) / (1.0 - std::pow((double)n_vocab_, -eps)), 1.0 / s);
        if (std::isfinite(k) && k >= 0) n = std::min(n, std::max<size_t>(1, (size_t)k));
    }
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
