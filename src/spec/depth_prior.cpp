// spec/depth_prior: folding a request's depth estimates into the per-process prior (depth_prior.h).
#include "spec/depth_prior.h"

#include <algorithm>

namespace bee {

void DepthPrior::blend(Stat& s, double x) const {
    s.v = s.known ? s.v + weight_ * (x - s.v) : x;  // the first measurement of a position defines it
    s.known = true;
}

void DepthPrior::fold(const std::vector<double>& survival, const std::vector<double>& reach,
                      const std::vector<bool>& own, double width, double draft_ms) {
    if (weight_ <= 0) return;  // --spec-dm-prior-weight 0: every request starts from nothing
    const size_t n = std::min({survival.size(), reach.size(), own.size()});
    if (survival_.size() < n) {
        survival_.resize(n);
        reach_.resize(n);
    }
    bool any = false;
    for (size_t pos = 0; pos < n; pos++) {
        if (!own[pos]) continue;
        blend(survival_[pos], survival[pos]);
        blend(reach_[pos], reach[pos]);
        any = true;
    }
    if (width > 0) blend(width_, width);
    if (draft_ms >= 0) blend(draft_ms_, draft_ms);
    if (any) n_requests_++;
}

}  // namespace bee
