// spec/registry: the one table from drafter name to factory (in the fixed priority order used when
// several types are combined), `--spec-type` list parsing, and SpecShared — the per-process state of
// every configured drafter kind.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "spec/depth_policy.h"
#include "spec/drafter.h"

namespace bee {

struct DrafterKind {
    const char* name;        // CLI name (--spec-type)
    const char* stats_name;  // name in the statistics lines (llama.cpp's internal name)
    std::unique_ptr<Drafter> (*make)(const DrafterEnv& env);
    // Process-wide state, created once at start-up (nullptr: none).
    std::unique_ptr<DrafterShared> (*make_shared)(const SpecParams& params, const Model& target);
};

// Every drafter kind, highest priority first.
const std::vector<DrafterKind>& drafter_kinds();
const DrafterKind* find_drafter_kind(const std::string& name);  // nullptr if unknown

// "ngram-mod,suffix" -> the names in priority order. "none" anywhere (or "") gives an empty list.
// Throws Error naming an unknown type and listing the known ones.
std::vector<std::string> parse_spec_types(const std::string& list);

// Shared state of every kind in params.types; loads draft models and lookup caches, so bad files are
// reported at start-up. One per process (the server shares it between slots).
class SpecShared {
public:
    SpecShared(const SpecParams& params, const Model& target);
    ~SpecShared();
    const SpecParams& params() const { return params_; }
    const Model& target() const { return target_; }
    DrafterShared* get(const std::string& name) const;
    // The verify cost curve every sequence's profit controller shares (depth_policy.h).
    const std::shared_ptr<VerifyCostModel>& verify_cost() const { return verify_cost_; }
    // What the depth policies of earlier requests with these drafter types learnt (depth_prior.h): one
    // prior per type set, since acceptance is a property of the drafters. The reference stays valid.
    DepthPrior& depth_prior(const std::vector<std::string>& types);

private:
    SpecParams params_;
    const Model& target_;
    std::map<std::string, std::unique_ptr<DrafterShared>> shared_;
    std::shared_ptr<VerifyCostModel> verify_cost_ = std::make_shared<VerifyCostModel>();
    std::map<std::string, DepthPrior> priors_;  // key: the type names joined with ','
};

}  // namespace bee
