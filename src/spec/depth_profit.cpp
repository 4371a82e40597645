// spec/depth_profit: the profit controller (drafters.md 2.9, bee's server-adaptive-dm): EWMAs of
// per-position survival and of cycle time per depth; each cycle picks the depth with the most expected
// tokens per second, against a no-speculation baseline, with hysteresis, probes and exploration.
#include <algorithm>
#include <cmath>
#include <vector>

#include "spec/depth_policy.h"

namespace bee {

namespace {

constexpr int kMaxDepth = 128;

struct Ewma {
    double v = 0;
    int n = 0;
    void add(double x, double a) {
        v = n == 0 ? x : v + a * (x - v);
        n++;
    }
};

class ProfitPolicy : public DepthPolicy {
public:
    explicit ProfitPolicy(const DepthParams& p) : p_(p) {
        alpha_ = std::clamp((double)p.ewma_alpha, 0.01, 1.0);
        min_samples_ = std::max(1, p.min_samples);
        warmup_ = p.warmup > 0 ? p.warmup : min_samples_;
        reset(-1);
    }
    const char* name() const override { return "profit"; }

    int next(int base) override {
        base = std::min(base, kMaxDepth);
        if (base != base_) reset(base);
        if (baseline_.n < min_samples_) return 0;  // seed the no-speculation baseline first
        if (warm_done_ < warmup_) {
            warm_done_++;
            cur_ = base;
            return base;
        }
        decide();
        if (cur_ == 0) {  // off: probe now and then so a workload that turns repetitive is noticed
            off_cycles_++;
            if (off_cycles_ % std::max(1, p_.probe_interval) == 0)
                return std::min(base, std::max(2, (int)std::lround(base * p_.probe_fraction)));
            return 0;
        }
        active_cycles_++;
        if (p_.baseline_interval > 0 && active_cycles_ % p_.baseline_interval == 0) return 0;
        if (p_.explore_interval > 0 && active_cycles_ % p_.explore_interval == 0) {
            explorations_++;
            if (explorations_ % 4 == 0) return base;
            const std::vector<int> ladder = rungs();
            auto it = std::upper_bound(ladder.begin(), ladder.end(), cur_);
            return it == ladder.end() ? cur_ : *it;
        }
        return cur_;
    }

    void record(const CycleRecord& c) override {
        if (c.depth > 0) {
            const int d = std::min(c.depth, kMaxDepth);
            for (int pos = 0; pos < d; pos++) survival_[pos].add(c.n_accepted > pos ? 1.0 : 0.0, alpha_);
            if (c.timed) {
                timing_[d].add(c.cycle_ms, alpha_);
                draft_[d].add(c.draft_ms, alpha_);
            }
        } else if (c.timed) {
            baseline_.add(c.cycle_ms, alpha_);
        }
    }

private:
    void reset(int base) {
        base_ = base;
        survival_.assign(kMaxDepth, Ewma{});
        timing_.assign(kMaxDepth + 1, Ewma{});
        draft_.assign(kMaxDepth + 1, Ewma{});
        baseline_ = Ewma{};
        cur_ = std::max(base, 0);
        warm_done_ = off_cycles_ = active_cycles_ = explorations_ = losing_ = 0;
    }

    // {0, 1..8, 10, 12, 14, 16, base} within [0, base], plus the current depth.
    std::vector<int> rungs() const {
        std::vector<int> r;
        for (int n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16})
            if (n <= base_) r.push_back(n);
        r.push_back(base_);
        r.push_back(cur_);
        std::sort(r.begin(), r.end());
        r.erase(std::unique(r.begin(), r.end()), r.end());
        return r;
    }

    // Expected tokens per second at depth n, or a negative value if not enough is known yet.
    double score(int n) const {
        if (n == 0) return baseline_.n > 0 ? 1000.0 / baseline_.v : -1.0;
        double expected = 0;
        for (int pos = 0; pos < n; pos++) {
            if (survival_[pos].n < min_samples_) return -1.0;
            expected += survival_[pos].v;
        }
        double ms = -1.0;
        if (timing_[n].n >= min_samples_) {
            ms = timing_[n].v;
        } else {  // estimate from the nearest measured depth r: n * draft_ms/r + (cycle - draft) at r
            int best_r = -1;
            for (int r = 1; r <= kMaxDepth; r++)
                if (timing_[r].n >= min_samples_ && (best_r < 0 || std::abs(r - n) < std::abs(best_r - n))) best_r = r;
            if (best_r < 0) return -1.0;
            ms = n * (draft_[best_r].v / best_r) + (timing_[best_r].v - draft_[best_r].v);
        }
        return ms > 0 ? (1.0 + expected) * 1000.0 / ms : -1.0;
    }

    void decide() {
        const std::vector<int> ladder = rungs();
        int best = -1;
        double best_score = -1.0;
        for (int n : ladder) {
            const double s = score(n);
            if (s > best_score) {
                best_score = s;
                best = n;
            }
        }
        if (best < 0) return;
        const double base_score = score(0);
        if (best == 0 || best_score < base_score * (1.0 + p_.profit_min)) {
            if (++losing_ >= p_.off_dwell) cur_ = 0;
            return;
        }
        losing_ = 0;
        const double cur_score = score(cur_);
        const int ci = (int)(std::find(ladder.begin(), ladder.end(), cur_) - ladder.begin());
        const int bi = (int)(std::find(ladder.begin(), ladder.end(), best) - ladder.begin());
        if (bi > ci && best_score > cur_score * (1.0 + p_.raise_margin))
            cur_ = ladder[std::min(bi, ci + 2)];  // climb at most two rungs
        else if (bi < ci && best_score > cur_score * (1.0 + p_.lower_margin))
            cur_ = ladder[ci - 1];  // one rung down per decision
    }

    DepthParams p_;
    double alpha_ = 0.15;
    int min_samples_ = 3, warmup_ = 3;
    int base_ = -1, cur_ = 0;
    int warm_done_ = 0, off_cycles_ = 0, active_cycles_ = 0, explorations_ = 0, losing_ = 0;
    std::vector<Ewma> survival_;        // [pos]: P(accepted > pos) at the depths asked
    std::vector<Ewma> timing_, draft_;  // [depth]: cycle and drafting ms
    Ewma baseline_;                     // cycle ms without speculation
};

}  // namespace

std::unique_ptr<DepthPolicy> make_profit_policy(const DepthParams& p) { return std::make_unique<ProfitPolicy>(p); }

}  // namespace bee
