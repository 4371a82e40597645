// spec/depth_fringe: the fringe controller (drafters.md 2.9): watch the acceptance of the last few
// positions below the depth (the "fringe"); deepen when it is high, shorten or stop when it is low.
#include <algorithm>
#include <cmath>
#include <vector>

#include "spec/depth_policy.h"

namespace bee {

namespace {

constexpr int kWindow = 3;  // positions just below the depth that form the fringe

class FringePolicy : public DepthPolicy {
public:
    explicit FringePolicy(const DepthParams& p) : p_(p) {}
    const char* name() const override { return "fringe"; }

    int next(int base) override {
        if (base != base_) {
            base_ = base;
            cur_ = base;
            new_epoch();
        }
        if (cur_ == 0) {  // off: probe now and then
            if (++off_cycles_ % std::max(1, p_.probe_interval) == 0) {
                return std::min(base_, std::max(2, (int)std::lround(base_ * p_.probe_fraction)));
            }
        }
        const double f = fringe(cur_ > 0 ? cur_ : base_);
        if (f < 0) return cur_;
        int target;
        if (f < p_.fringe_min) {
            target = ++low_streak_ >= p_.off_dwell ? 0 : cur_;
        } else {
            low_streak_ = 0;
            target = f >= p_.fringe_max
                         ? base_
                         : std::max(2, (int)std::lround(base_ * (f - p_.fringe_min) / (p_.fringe_max - p_.fringe_min)));
        }
        target = std::clamp(target, cur_ - 2, cur_ + 2);  // at most two steps per cycle
        target = std::clamp(target, 0, base_);
        if (target > cur_ && cur_ > 0 && fringe(cur_) < required(target)) target = cur_;  // promote on evidence
        if (target < cur_) new_epoch();
        if (target == 0 && cur_ > 0) off_cycles_ = 0;
        cur_ = target;
        return cur_;
    }

    void record(const CycleRecord& c) override {
        if (c.depth <= 0) return;
        const int d = c.depth;
        if ((int)reached_.size() < d) {
            reached_.resize(d, 0);
            accepted_.resize(d, 0);
        }
        for (int pos = 0; pos < c.n_drafted && pos < d; pos++) {
            reached_[pos]++;
            if (c.n_accepted > pos) accepted_[pos]++;
        }
        epoch_drafted_ += c.n_drafted;
        epoch_accepted_ += c.n_accepted;
    }

private:
    void new_epoch() {
        reached_.assign(std::max(base_, 0), 0);
        accepted_.assign(std::max(base_, 0), 0);
        epoch_drafted_ = epoch_accepted_ = 0;
    }
    // Acceptance over positions [depth - 3, depth) of this epoch; the epoch's overall acceptance when
    // the fringe has fewer than min_reach samples; -1 with no data at all.
    double fringe(int depth) const {
        long reach = 0, acc = 0;
        for (int pos = std::max(0, depth - kWindow); pos < depth && pos < (int)reached_.size(); pos++) {
            reach += reached_[pos];
            acc += accepted_[pos];
        }
        if (reach >= p_.min_reach) return (double)acc / (double)reach;
        if (epoch_drafted_ >= p_.min_reach) return (double)epoch_accepted_ / (double)epoch_drafted_;
        return -1.0;
    }
    // The fringe needed to hold depth d: fringe_min at depth 2 rising linearly to fringe_max at base.
    double required(int d) const {
        if (base_ <= 2) return p_.fringe_min;
        return p_.fringe_min + (p_.fringe_max - p_.fringe_min) * (double)(d - 2) / (double)(base_ - 2);
    }

    DepthParams p_;
    int base_ = -1, cur_ = 0, low_streak_ = 0, off_cycles_ = 0;
    std::vector<long> reached_, accepted_;  // [pos], this epoch
    long epoch_drafted_ = 0, epoch_accepted_ = 0;
};

}  // namespace

std::unique_ptr<DepthPolicy> make_fringe_policy(const DepthParams& p) { return std::make_unique<FringePolicy>(p); }

}  // namespace bee
