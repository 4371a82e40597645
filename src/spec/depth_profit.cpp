// spec/depth_profit: the profit controller (drafters.md 2.9, bee's server-adaptive-dm): EWMAs of
// per-position survival; each cycle picks the depth with the most expected tokens per second, against a
// no-speculation baseline, with hysteresis, probes and exploration.
//
// Where Bee differs from the spec, and why: cycle time is not an EWMA per depth (a depth never drafted
// was estimated as costing the same verify as its neighbour, which on a CPU — every extra row costs a
// quarter of a plain decode on SmolLM2 — made deep drafts look free) but the process's step cost
// curve (VerifyCostModel: step ms by rows), applied to the rows a depth is expected to draft (drafters
// often propose fewer tokens than the cap). The curve is shared across requests, so a new request does
// not re-learn it. Survival beyond the current depth is only seen in explorations, so a controller that
// settled shallow stayed there on copy runs; two cycles in a row whose draft filled the depth and was
// wholly accepted now move it one rung up (the fringe controller's edge idea). Down, it goes straight to
// the best depth (a deep draft that does not pay costs every cycle it stays).
//
// In a server step several slots share (set_batch), a draft row slows every slot of the step, so a depth
// is scored by the step's throughput: the other slots' tokens and rows count too. Such a step warms up at
// a depth of at most kSharedWarmupDepth: four slots warming up at 16 made steps of 68 rows, ~8x a plain
// step on Gemma 3 (each row pays its 262k-entry output head).
//
// Requests start from the process's prior (depth_prior.h) instead of from nothing: survival, reach and
// width are seeded with the prior's values (counted as min_samples samples, so the request's own cycles
// take over at the EWMA rate), the warm-up is skipped, and the first depth is the best-scoring one under
// the prior — 0 (off, probing) when no depth beats the baseline. A probe that fills its depth and is
// wholly accepted turns drafting on at that depth: the prior said off, the request says otherwise.
#include <algorithm>
#include <cmath>
#include <vector>

#include "spec/depth_policy.h"

namespace bee {

namespace {

constexpr int kMaxDepth = 128;
constexpr int kSharedWarmupDepth = 4;  // warm-up depth in a shared step (deeper: reached by climbing)
constexpr int kMaxProbeBackoff = 3;    // off, the probe interval doubles per failed probe, up to 2^3 times

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
    ProfitPolicy(const DepthParams& p, std::shared_ptr<VerifyCostModel> cost) : p_(p), cost_(std::move(cost)) {
        alpha_ = std::clamp((double)p.ewma_alpha, 0.01, 1.0);
        min_samples_ = std::max(1, p.min_samples);
        warmup_ = p.warmup > 0 ? p.warmup : min_samples_;
        reset(-1);
    }
    const char* name() const override { return "profit"; }

    int next(int base) override {
        base = std::min(base, kMaxDepth);
        if (base != base_) reset(base);
        // seed the no-speculation baseline first (unless earlier requests did)
        if (n_plain_ < min_samples_ && !cost_->has_baseline(n_past_, other_rows_)) return 0;
        if (start_pending_) {
            start_pending_ = false;
            if (start_from_prior()) warm_done_ = warmup_;
        }
        if (warm_done_ < warmup_) {  // in a step other slots share, every warm-up row slows them all
            warm_done_++;
            cur_ = other_rows_ > 0 ? std::min(base, kSharedWarmupDepth) : base;
            return cur_;
        }
        decide();
        if (cur_ > 0 && full_streak_ >= 2) {  // drafts cut by the cap and wholly accepted: try deeper
            const std::vector<int> ladder = rungs();
            auto it = std::upper_bound(ladder.begin(), ladder.end(), cur_);
            if (it != ladder.end()) cur_ = *it;
            full_streak_ = 0;
        }
        if (cur_ == 0) {  // off: probe now and then so a workload that turns repetitive is noticed
            // each probe that does not pay doubles the wait for the next (up to 8x --spec-dm-probe-interval)
            const int interval = std::max(1, p_.probe_interval) << std::min(failed_probes_, kMaxProbeBackoff);
            if (++off_cycles_ >= interval) {
                off_cycles_ = 0;
                return std::min(base, std::max(2, (int)std::lround(base * p_.probe_fraction)));
            }
            return 0;
        }
        failed_probes_ = 0;
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
        n_past_ = c.n_past;
        const int nodes = c.n_nodes >= 0 ? c.n_nodes : c.n_drafted;
        // reach[pos]: how often a cycle that asked for depth > pos got a draft that long (the drafters' own
        // length, and confidence cuts); survival[pos]: how often a draft that long had pos + 1 accepted. A
        // cycle whose drafters proposed nothing cost no verify row (only the drafting time) and says nothing
        // about acceptance.
        if (c.depth > 0) {
            const int d = std::min(c.depth, kMaxDepth);
            draft_ms_.add(std::max(0.0, c.draft_ms), alpha_);
            for (int pos = 0; pos < d; pos++) {
                reach_[pos].add(c.n_drafted > pos ? 1.0 : 0.0, alpha_);
                if (c.n_drafted > pos) survival_[pos].add(c.n_accepted > pos ? 1.0 : 0.0, alpha_);
                own_[pos] = true;
            }
        }
        if (c.depth > 0 && c.n_drafted > 0) {
            const int d = std::min(c.depth, kMaxDepth);
            width_.add((double)nodes / c.n_drafted, alpha_);
            own_width_ = true;
            const bool full = c.n_drafted >= c.depth && c.n_accepted >= c.depth;
            full_streak_ = full ? full_streak_ + 1 : 0;
            if (full && cur_ == 0 && warm_done_ >= warmup_) {  // a probe that wholly paid: drafting on
                cur_ = d;
                losing_ = full_streak_ = failed_probes_ = 0;
            } else if (cur_ == 0 && warm_done_ >= warmup_) {
                failed_probes_++;
            }
        }
        if (c.timed) cost_->add(c.n_past, nodes, c.cycle_ms - std::max(0.0, c.draft_ms));  // the target's part
        if (c.depth == 0) n_plain_++;
    }

    void set_batch(int other_rows, int other_tokens) override {
        other_rows_ = std::max(other_rows, 0);
        other_tokens_ = std::max(other_tokens, 0);
    }

    void seed(const DepthPrior& prior) override {
        prior_ = prior;
        reset(base_);
    }

    void fold(DepthPrior& prior) const override {
        std::vector<double> survival(kMaxDepth), reach(kMaxDepth);
        for (int pos = 0; pos < kMaxDepth; pos++) {
            survival[pos] = survival_[pos].v;
            reach[pos] = reach_[pos].v;
        }
        prior.fold(survival, reach, own_, own_width_ ? width_.v : -1.0, draft_ms_.n > 0 ? draft_ms_.v : -1.0);
    }

private:
    // Seeds the estimates from the prior (if it knows anything); the start decision waits for next().
    void apply_prior() {
        start_pending_ = false;
        if (!prior_.known()) return;
        const auto load = [this](const std::vector<DepthPrior::Stat>& from, std::vector<Ewma>& to) {
            for (size_t pos = 0; pos < from.size() && pos < to.size(); pos++)
                if (from[pos].known) to[pos] = Ewma{from[pos].v, min_samples_};
        };
        load(prior_.survival(), survival_);
        load(prior_.reach(), reach_);
        if (prior_.width().known) width_ = Ewma{prior_.width().v, min_samples_};
        if (prior_.draft_ms().known) draft_ms_ = Ewma{prior_.draft_ms().v, min_samples_};
        start_pending_ = true;
    }

    // The first depth of a seeded request: the best-scoring rung, or 0 if none beats the baseline by
    // profit_min. False (keep the usual warm-up) when the prior or the cost curve cannot score yet (a prior
    // folded only from requests that never drafted knows no depth).
    bool start_from_prior() {
        int best = -1;
        double best_score = -1.0;
        for (int n : rungs()) {
            if (n == 0) continue;
            const double s = score(n);
            if (s > best_score) {
                best_score = s;
                best = n;
            }
        }
        const double base_score = score(0);
        if (best < 0 || base_score < 0) return false;
        cur_ = best > 0 && best_score >= base_score * (1.0 + p_.profit_min) ? best : 0;
        return true;
    }

    void reset(int base) {
        base_ = base;
        survival_.assign(kMaxDepth, Ewma{});
        reach_.assign(kMaxDepth, Ewma{});
        width_ = draft_ms_ = Ewma{};
        n_plain_ = 0;
        cur_ = std::max(base, 0);
        warm_done_ = off_cycles_ = active_cycles_ = explorations_ = losing_ = full_streak_ = failed_probes_ = 0;
        own_.assign(kMaxDepth, false);
        own_width_ = false;
        apply_prior();
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

    // Expected tokens per second at depth n, or a negative value if not enough is known yet: accepted
    // tokens E(n) = sum over positions < n of reach x survival, rows = width x sum of reach (how often the
    // drafters propose that far), time from the cost curve plus the drafting time of a cycle that drafts. A
    // position the drafters hardly ever reach (reach < 0.1, measured) needs no survival of its own. In a
    // shared step the other sequences' rows and tokens count too (set_batch): the step's throughput, which
    // this sequence's draft rows slow for all.
    double score(int n) const {
        double expected = 0, rows = 0;
        for (int pos = 0; pos < n; pos++) {
            const bool rare = reach_[pos].n >= min_samples_ && reach_[pos].v < 0.1;
            if (survival_[pos].n < min_samples_ && !rare) return -1.0;
            expected += reach_[pos].v * (survival_[pos].n > 0 ? survival_[pos].v : 0.0);
            rows += reach_[pos].v;
        }
        if (n > 0) rows *= width_.n > 0 ? std::max(1.0, width_.v) : 1.0;
        const double target_ms = cost_->predict(n_past_, other_rows_ + rows);
        const double ms = target_ms + (n > 0 ? draft_ms_.v : 0.0);
        return target_ms > 0 ? (other_tokens_ + 1.0 + expected) * 1000.0 / ms : -1.0;
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
            cur_ = best;  // straight down: a deep draft that does not pay costs every cycle it stays
    }

    DepthParams p_;
    std::shared_ptr<VerifyCostModel> cost_;
    double alpha_ = 0.15;
    int min_samples_ = 3, warmup_ = 3;
    int base_ = -1, cur_ = 0;
    int warm_done_ = 0, off_cycles_ = 0, active_cycles_ = 0, explorations_ = 0, losing_ = 0;
    int failed_probes_ = 0;       // probes in a row since drafting was last on that drafted and did not pay
    std::vector<Ewma> survival_;  // [pos]: P(accepted > pos | drafted > pos)
    std::vector<Ewma> reach_;     // [pos]: P(drafted > pos | asked for more than pos): the drafters' own length
    Ewma draft_ms_;               // drafting time of a cycle that called the drafters
    Ewma width_;                  // draft rows per drafted position (1 for chains, more for trees)
    int n_plain_ = 0;             // plain cycles of this sequence (the baseline is seeded with them)
    int32_t n_past_ = 0;          // the context at the last cycle (the cost curve's bucket)
    int other_rows_ = 0, other_tokens_ = 0;  // the step the next cycle joins (set_batch)
    int full_streak_ = 0;                    // cycles in a row whose draft reached the depth and was all accepted
    DepthPrior prior_;                       // the process's prior at this request's start (seed())
    bool start_pending_ = false;             // seeded: pick the first depth from the prior at the next next()
    std::vector<bool> own_;                  // [pos]: this request drafted position pos (fold() updates only those)
    bool own_width_ = false;
};

}  // namespace

std::unique_ptr<DepthPolicy> make_profit_policy(const DepthParams& p, std::shared_ptr<VerifyCostModel> cost) {
    return std::make_unique<ProfitPolicy>(p, std::move(cost));
}

}  // namespace bee
