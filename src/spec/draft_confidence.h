// spec/draft_confidence: how far a drafter that scores its own tokens (EAGLE-3, DFlash) drafts. Its top-1
// probability per depth is calibrated against what the target accepted, and a greedy chain stops where the
// calibrated chance of reaching the next depth no longer pays for that depth's verify row.
//
// Why: a small drafter is over- or under-confident (our DFlash drafter on SmolLM2 gives its first token
// ~0.5 where the target accepts 0.27-0.30), and every verify row costs the whole network on a CPU (about a
// quarter of a plain decode on SmolLM2), so a depth-7 chain of which one token is ever accepted costs
// 2.75 decodes for 1.3 tokens. Calibrated, the chain stops at the depth that pays, per draft.
#pragma once
#include <cstdint>
#include <vector>

namespace bee {

class DraftConfidence {
public:
    // A new draft: row_cost = req.row_cost (one verify row in plain decodes; < 0 not measured: no cut).
    void begin(double row_cost);
    // The next depth's top-1 probability p (the drafter's own, before calibration): true if that depth is
    // drafted. Once it returns false the draft stops (later calls return false too).
    bool keep(double p);
    // After verification of this drafter's last draft: n_accepted of its chain were accepted (with a tree,
    // the main chain's accepted nodes, main_chain_accepted: a runner-up that was accepted is not the top-1's).
    void accepted(int n_accepted);
    // The calibration factor of depth d (0-based): accepted / predicted over the cycles that reached it
    // (1 until kMinSamples of them).
    double scale(int d) const;
    int drafted() const { return (int)p_.size(); }

    static constexpr int kMinSamples = 4;
    static constexpr int kExploreEvery = 16;  // every 16th draft is not cut, so a depth cut off is re-measured

private:
    struct Stat {
        double pred = 0, act = 0;  // EWMA-weighted sums of the predicted p and of "accepted"
        int n = 0;
    };
    std::vector<Stat> stats_;  // per depth
    std::vector<double> p_;    // this draft's raw top-1 probabilities, per drafted depth
    double row_cost_ = -1, q_ = 1, expected_ = 0;
    bool stopped_ = false, explore_ = false;
    long n_drafts_ = 0;
};

// How many nodes of the main chain a verify path accepted, for drafters that add their chain first (node i
// at row i + 1, each the previous one's child) and branches after it: the leading run of committed rows 1, 2,
// 3, ... (a path that turns into a branch stops counting there). committed_rows: VerifyRows::committed_rows.
int main_chain_accepted(const std::vector<int32_t>& committed_rows);

struct DepthTop;
// Scales each depth's candidates by that depth's calibration factor (log-probabilities, capped at 0), so a
// tree's branches are weighed with the calibrated chances too.
void calibrate(const DraftConfidence& c, std::vector<DepthTop>& depth);

}  // namespace bee
