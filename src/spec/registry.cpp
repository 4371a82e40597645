// spec/registry: the drafter table. Adding a drafter = one file in spec/drafters/ + one row here.
#include "spec/registry.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"
#include "spec/drafters/drafters.h"

namespace bee {

const std::vector<DrafterKind>& drafter_kinds() {
    // Priority (first non-empty draft wins): upstream's n-gram order, then Bee's model-free drafters,
    // then the draft model (modelfree-and-server.md A.2: "draftless decoding has higher precedence").
    static const std::vector<DrafterKind> kinds = {
        {"ngram-simple", "ngram_simple", make_ngram_simple, nullptr},
        {"ngram-map-k", "ngram_map_k", make_ngram_map_k, nullptr},
        {"ngram-map-k4v", "ngram_map_k4v", make_ngram_map_k4v, nullptr},
        {"ngram-mod", "ngram_mod", make_ngram_mod, make_ngram_mod_shared},
        {"ngram-cache", "ngram_cache", make_ngram_cache, make_ngram_cache_shared},
        {"copyspec", "copyspec", make_copyspec, nullptr},
        {"recycle", "recycle", make_recycle, make_recycle_shared},
        {"suffix", "suffix", make_suffix, make_suffix_shared},
        {"draft", "draft", make_draft_model, make_draft_model_shared},
    };
    return kinds;
}

const DrafterKind* find_drafter_kind(const std::string& name) {
    for (const DrafterKind& k : drafter_kinds())
        if (name == k.name) return &k;
    return nullptr;
}

std::vector<std::string> parse_spec_types(const std::string& list) {
    std::vector<std::string> names;
    std::stringstream ss(list);
    std::string item;
    bool none = list.empty();
    while (std::getline(ss, item, ',')) {
        if (item == "none") {
            none = true;
            continue;
        }
        if (!find_drafter_kind(item)) {
            std::string known = "none";
            for (const DrafterKind& k : drafter_kinds()) known += std::string(", ") + k.name;
            fail("unknown speculative type: '%s' (known: %s; combine with commas, e.g. ngram-mod,suffix)",
                 item.c_str(), known.c_str());
        }
        if (std::find(names.begin(), names.end(), item) == names.end()) names.push_back(item);
    }
    if (none) return {};
    std::vector<std::string> ordered;  // the command-line order does not matter: the table's does
    for (const DrafterKind& k : drafter_kinds())
        if (std::find(names.begin(), names.end(), k.name) != names.end()) ordered.push_back(k.name);
    return ordered;
}

SpecShared::SpecShared(const SpecParams& params, const Model& target) : params_(params), target_(target) {
    for (const std::string& name : params_.types) {
        const DrafterKind* k = find_drafter_kind(name);
        if (!k) fail("unknown speculative type: '%s'", name.c_str());
        if (k->make_shared) shared_[name] = k->make_shared(params_, target_);
    }
}

SpecShared::~SpecShared() = default;

DepthPrior& SpecShared::depth_prior(const std::vector<std::string>& types) {
    std::string key;
    for (const std::string& t : types) key += (key.empty() ? "" : ",") + t;
    return priors_.try_emplace(key, params_.depth.prior_weight).first->second;
}

DrafterShared* SpecShared::get(const std::string& name) const {
    auto it = shared_.find(name);
    return it == shared_.end() ? nullptr : it->second.get();
}

}  // namespace bee
