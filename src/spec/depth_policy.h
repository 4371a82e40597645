// spec/depth_policy: picks each sequence's next draft depth (0 = do not draft this cycle) from measured
// acceptance and cycle times — fixed, profit and fringe (drafters.md 2.9, --spec-dm-*).
#pragma once
#include <memory>

#include "spec/spec_params.h"

namespace bee {

// One finished speculative cycle of a sequence.
struct CycleRecord {
    int depth = 0;        // the cap asked of the drafters (0: a plain, non-speculative cycle)
    int n_drafted = 0;    // draft tokens on the longest path actually proposed (<= depth)
    int n_accepted = 0;
    double draft_ms = 0;  // time in the drafters
    double cycle_ms = 0;  // draft + verify decode + verification + commit
    bool timed = true;    // false: the cycle shared its decode with other sequences (timing unusable)
};

class DepthPolicy {
public:
    virtual ~DepthPolicy() = default;
    // The depth cap for the next cycle, in [0, base]; base = the drafters' own longest draft.
    virtual int next(int base) = 0;
    virtual void record(const CycleRecord& c) = 0;
    virtual const char* name() const = 0;
};

// "fixed" when !p.adaptive, else p.controller ("profit" or "fringe"). Throws Error on an unknown name.
std::unique_ptr<DepthPolicy> make_depth_policy(const DepthParams& p);

std::unique_ptr<DepthPolicy> make_profit_policy(const DepthParams& p);
std::unique_ptr<DepthPolicy> make_fringe_policy(const DepthParams& p);

}  // namespace bee
