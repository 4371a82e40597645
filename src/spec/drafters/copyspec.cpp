// spec/drafters/copyspec: CopySpec (arXiv 2502.08923; modelfree-and-server.md A.3.5). Every gamma-token
// window of the context (prompt and generated text) is indexed by its FNV-1a hash; when the last gamma
// tokens match an earlier window, the tokens that followed it are copied as the draft — from the
// occurrence with the most tokens after it.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "spec/drafters/drafters.h"
#include "spec/registry.h"

namespace bee {

namespace {

uint64_t fnv1a(const int32_t* t, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)t[i];
        for (int b = 0; b < 4; b++, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
    }
    return h;
}

class CopySpec : public Drafter {
public:
    explicit CopySpec(const SpecParams& p)
        : gamma_(std::max(1, p.copyspec_gamma)), n_max_(std::max(1, p.draft_n_max)) {}
    int n_max() const override { return n_max_; }

    void begin(const std::vector<int32_t>&) override {
        index_.clear();
        n_indexed_ = 0;
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        seq_.assign(req.history.begin(), req.history.end());
        seq_.push_back(req.id_last);
        const int L = (int)seq_.size();
        if (L <= gamma_) return;
        // index windows ending before the last one: entry = position just after the window
        for (; n_indexed_ + gamma_ < L; n_indexed_++)
            index_.emplace(fnv1a(&seq_[n_indexed_], gamma_), n_indexed_ + gamma_);
        const int32_t* tail = &seq_[L - gamma_];
        auto [lo, hi] = index_.equal_range(fnv1a(tail, gamma_));
        int best = -1;
        for (auto it = lo; it != hi; ++it) {
            const int after = it->second;
            if (memcmp(&seq_[after - gamma_], tail, sizeof(int32_t) * gamma_) != 0) continue;  // collision
            if (best < 0 || after < best) best = after;  // earliest = most tokens available after it
        }
        if (best < 0) return;
        const int n = std::min({n_max_, req.n_max, L - best});
        if (n > 0) out.add_chain(&seq_[best], n);
    }

private:
    int gamma_, n_max_;
    std::vector<int32_t> seq_;
    std::unordered_multimap<uint64_t, int32_t> index_;
    int n_indexed_ = 0;
};

}  // namespace

std::unique_ptr<Drafter> make_copyspec(const DrafterEnv& env) { return std::make_unique<CopySpec>(env.params); }

extern const DrafterKind kDrafterCopyspec = {"copyspec", "",    "copyspec",    {},     nullptr,
                                             nullptr,    false, make_copyspec, nullptr};

}  // namespace bee
