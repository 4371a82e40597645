// spec/registry: the drafter table in priority order (each row is defined in its drafter's file).
#include "spec/registry.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"
#include "base/thread_pool.h"
#include "gguf/gguf.h"
#include "spec/drafters/drafters.h"

namespace bee {

const std::vector<DrafterKind>& drafter_kinds() {
    // Priority (first non-empty draft wins): upstream's n-gram order, then Bee's model-free drafters,
    // then the target's MTP block and the draft model (modelfree-and-server.md A.2: "draftless decoding has
    // higher precedence"; drafters.md §8.4: n-gram types first in combinations).
    static const std::vector<DrafterKind> kinds = {kDrafterNgramSimple, kDrafterNgramMapK,  kDrafterNgramMapK4v,
                                                   kDrafterNgramMod,    kDrafterNgramCache, kDrafterCopyspec,
                                                   kDrafterRecycle,     kDrafterSuffix,     kDrafterMtp,
                                                   kDrafterDraftModel,  kDrafterEagle3,     kDrafterDflash};
    return kinds;
}

std::string drafter_kind_names() {
    std::string s;
    for (const DrafterKind& k : drafter_kinds()) s += std::string(s.empty() ? "" : ", ") + k.name;
    return s;
}

static bool in_list(const char* list, const std::string& name) {
    std::stringstream ss(list);
    std::string a;
    while (std::getline(ss, a, ','))
        if (a == name) return true;
    return false;
}

const DrafterKind* find_drafter_kind(const std::string& name) {
    for (const DrafterKind& k : drafter_kinds())
        if (name == k.name || in_list(k.aliases, name)) return &k;
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
        const DrafterKind* k = find_drafter_kind(item);
        if (!k)
            fail("unknown speculative type: '%s' (known: none, %s; combine with commas, e.g. ngram-mod,suffix)",
                 item.c_str(), drafter_kind_names().c_str());
        if (std::find(names.begin(), names.end(), k->name) == names.end()) names.push_back(k->name);
    }
    if (none) return {};
    std::vector<std::string> ordered;  // the command-line order does not matter: the table's does
    for (const DrafterKind& k : drafter_kinds())
        if (std::find(names.begin(), names.end(), k.name) != names.end()) ordered.push_back(k.name);
    return ordered;
}

static std::string file_architecture(const std::string& path) {
    return GgufFile::open(path).get_str("general.architecture", "");
}

const DrafterKind& drafter_kind_for_file(const std::string& path) {
    const std::string arch = file_architecture(path);
    const DrafterKind* model = nullptr;
    for (const DrafterKind& k : drafter_kinds()) {
        if (k.file_arch && *k.file_arch && in_list(k.file_arch, arch)) return k;
        if (k.file_arch && !*k.file_arch) model = &k;
    }
    return *model;
}

void check_drafter_file(const DrafterKind& kind, const std::string& path) {
    if (!kind.file_arch || path.empty()) return;
    const DrafterKind& fits = drafter_kind_for_file(path);
    if (&fits == &kind) return;
    fail("%s is a '%s' file, which --spec-type %s cannot use: use --spec-type %s with it", path.c_str(),
         file_architecture(path).c_str(), kind.name, fits.name);
}

std::vector<std::string> spec_types_for_slot(const SpecParams& params, const std::vector<std::string>& types,
                                             int slot) {
    std::vector<std::string> out;
    for (const std::string& t : types) {
        const DrafterKind* k = find_drafter_kind(t);
        const int32_t cap = k && k->max_slots ? k->max_slots(params) : 0;
        if (cap <= 0 || slot < cap) out.push_back(t);
    }
    return out;
}

SpecShared::SpecShared(const SpecParams& params, const Model& target, ThreadPool* pool)
    : params_(params), target_(target), pool_(pool) {
    for (const std::string& name : params_.types) {
        const DrafterKind* k = find_drafter_kind(name);
        if (!k) fail("unknown speculative type: '%s'", name.c_str());
        check_drafter_file(*k, params_.draft_model);
        if (k->make_shared) shared_[name] = k->make_shared(params_, target_);
    }
}

SpecShared::~SpecShared() = default;

ThreadPool& SpecShared::pool() {
    if (!pool_) {
        own_pool_ = std::make_unique<ThreadPool>(default_thread_count());
        pool_ = own_pool_.get();
    }
    return *pool_;
}

DepthPrior& SpecShared::depth_prior(const std::vector<std::string>& types) {
    std::string key;
    for (const std::string& t : types) key += (key.empty() ? "" : ",") + t;
    return priors_.try_emplace(key, params_.depth.prior_weight).first->second;
}

DrafterShared* SpecShared::get(const std::string& name) const {
    auto it = shared_.find(name);
    return it == shared_.end() ? nullptr : it->second.get();
}

void SpecShared::draft_queued() {
    for (auto& [name, s] : shared_) s->draft_queued();
}

}  // namespace bee
