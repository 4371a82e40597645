// spec/depth_policy: the fixed policy and the controller table.
#include "spec/depth_policy.h"

#include "base/error.h"

namespace bee {

namespace {

// Always the drafters' full depth (--no-spec-dm-adaptive).
class FixedPolicy : public DepthPolicy {
public:
    int next(int base) override { return base; }
    void record(const CycleRecord&) override {}
    const char* name() const override { return "fixed"; }
};

}  // namespace

std::unique_ptr<DepthPolicy> make_depth_policy(const DepthParams& p, std::shared_ptr<VerifyCostModel> cost) {
    if (!p.adaptive) return std::make_unique<FixedPolicy>();
    if (p.controller == "profit") return make_profit_policy(p, cost ? cost : std::make_shared<VerifyCostModel>());
    if (p.controller == "fringe") return make_fringe_policy(p);
    fail("unknown depth controller '%s' for --spec-dm-controller (use profit or fringe)", p.controller.c_str());
}

}  // namespace bee
