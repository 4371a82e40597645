// spec/draft_confidence: calibrated chain cut for drafters that score their tokens (contract in the header).
#include "spec/draft_confidence.h"

#include <algorithm>
#include <cmath>

#include "spec/draft_marginals.h"

namespace bee {

namespace {
constexpr double kAlpha = 0.05;  // EWMA weight of one cycle in the calibration sums
}

void DraftConfidence::begin(double row_cost) {
    row_cost_ = row_cost;
    p_.clear();
    q_ = 1;
    expected_ = 0;
    stopped_ = false;
    explore_ = ++n_drafts_ % kExploreEvery == 0;
}

double DraftConfidence::scale(int d) const {
    if (d < 0 || d >= (int)stats_.size() || stats_[(size_t)d].n < kMinSamples) return 1.0;
    const Stat& s = stats_[(size_t)d];
    return s.pred > 0 ? std::clamp(s.act / s.pred, 0.02, 4.0) : 1.0;
}

bool DraftConfidence::keep(double p) {
    if (stopped_) return false;
    const int d = (int)p_.size();
    const double q = q_ * std::min(1.0, std::max(0.0, p) * scale(d));  // calibrated chance to accept depth d+1
    // The row pays if its expected tokens beat the cycle's tokens per row-cost so far (suffix.cpp's rule):
    // q > s (1 + E) / (1 + s rows).
    if (!explore_ && row_cost_ > 0 && q <= row_cost_ * (1.0 + expected_) / (1.0 + row_cost_ * d)) {
        stopped_ = true;
        return false;
    }
    q_ = q;
    expected_ += q;
    p_.push_back(p);
    return true;
}

void DraftConfidence::accepted(int n_accepted) {
    if (stats_.size() < p_.size()) stats_.resize(p_.size());
    // depth d was reached when the d before it were accepted; it was accepted when n_accepted > d
    for (int d = 0; d < (int)p_.size() && d <= n_accepted; d++) {
        Stat& s = stats_[(size_t)d];
        const double w = std::max(kAlpha, 1.0 / (s.n + 1));
        s.pred += w * (p_[(size_t)d] - s.pred);
        s.act += w * ((n_accepted > d ? 1.0 : 0.0) - s.act);
        s.n++;
    }
    p_.clear();
}

int main_chain_accepted(const std::vector<int32_t>& committed_rows) {
    int n = 0;
    while ((size_t)n + 1 < committed_rows.size() && committed_rows[(size_t)n + 1] == n + 1) n++;
    return n;
}

void calibrate(const DraftConfidence& c, std::vector<DepthTop>& depth) {
    for (size_t d = 0; d < depth.size(); d++) {
        const float shift = (float)std::log(c.scale((int)d));
        for (float& lp : depth[d].lp) lp = std::min(0.0f, lp + shift);
    }
}

}  // namespace bee
