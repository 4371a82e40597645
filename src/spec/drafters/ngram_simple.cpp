// spec/drafters/ngram_simple: prompt-lookup drafting (modelfree-and-server.md A.3.2, PR #18471).
// The last N tokens (N-1 of history + id_last) are searched for in the history, most recent first;
// the tokens that followed the match become the draft. Stateless.
#include "spec/drafters/drafters.h"
#include "spec/registry.h"

#include <algorithm>
#include <cstring>

namespace bee {

namespace {

class NgramSimple : public Drafter {
public:
    explicit NgramSimple(const NgramSizes& s) : n_(std::max(1, s.size_n)), m_(std::max(1, s.size_m)) {}
    int n_max() const override { return m_; }

    void draft(const DraftRequest& req, DraftTree& out) override {
        const std::vector<int32_t>& h = req.history;
        const int L = (int)h.size();
        if (L <= n_ + m_ + 1) return;
        // pattern = h[L-N+1 .. L) + id_last
        pattern_.assign(h.end() - (n_ - 1), h.end());
        pattern_.push_back(req.id_last);
        for (int j = L - n_ - 1; j >= 1; j--) {  // position 0 never matches (upstream)
            if (h[j] != pattern_[0] || memcmp(&h[j], pattern_.data(), sizeof(int32_t) * n_) != 0) continue;
            const int k = std::min({m_, L - (j + n_), req.n_max});
            if (L - (j + n_) < n_) return;  // fewer than N tokens follow the match: no draft
            out.add_chain(&h[j + n_], k);
            return;
        }
    }

private:
    int n_, m_;
    std::vector<int32_t> pattern_;
};

}  // namespace

std::unique_ptr<Drafter> make_ngram_simple(const DrafterEnv& env) {
    return std::make_unique<NgramSimple>(env.params.ngram_simple);
}

extern const DrafterKind kDrafterNgramSimple =
    {"ngram-simple",
     "",
     "ngram_simple",
     {{"--spec-ngram-simple-size-n", "N", "key length N: tokens that must match [12]",
       [](SpecParams& p) { return &p.ngram_simple.size_n; }, nullptr, 1, 1024},
      {"--spec-ngram-simple-size-m", "N", "draft length M [48]", [](SpecParams& p) { return &p.ngram_simple.size_m; },
       nullptr, 1, 1024},
      {"--spec-ngram-simple-min-hits", "N", "key occurrences before drafting (map-k4v) [1]",
       [](SpecParams& p) { return &p.ngram_simple.min_hits; }, nullptr, 1, 1 << 20}},
     nullptr,
     nullptr,
     false,
     make_ngram_simple,
     nullptr};

}  // namespace bee
