// spec/drafters/ngram_mod: a fixed-size hash table from every n-token window to the token that followed
// it, shared by all sequences of the process (modelfree-and-server.md A.3.4, PR #19164). Drafts by
// rolling the window forward through the table; only drafts of at least n_min tokens are proposed.
#include "spec/drafters/drafters.h"
#include "spec/registry.h"

#include <algorithm>

#include "base/log.h"

namespace bee {

namespace {

constexpr size_t kTableSize = 4u * 1024 * 1024;  // int32 entries: 16 MiB
constexpr int kRefreshChunk = 32;                // new tokens before the table is refreshed

struct ModTable : DrafterShared {
    std::vector<int32_t> next = std::vector<int32_t>(kTableSize, -1);
    size_t used = 0;

    static size_t index(const int32_t* w, int n) {
        uint64_t h = 0;
        for (int i = 0; i < n; i++) h = h * 6364136223846793005ull + (uint64_t)(uint32_t)w[i];
        return (size_t)(h % kTableSize);
    }
    void add(const int32_t* w, int n, int32_t follower) {
        int32_t& e = next[index(w, n)];
        if (e < 0) used++;
        e = follower;
    }
    void reset() {
        std::fill(next.begin(), next.end(), -1);
        used = 0;
    }
};

class NgramMod : public Drafter {
public:
    NgramMod(const SpecParams& p, ModTable* t)
        : t_(t),
          n_(std::max(1, p.ngram_mod_n_match)),
          n_min_(p.ngram_mod_n_min),
          n_max_(std::max(1, p.ngram_mod_n_max)),
          dead_off_(p.ngram_mod_dead_off) {}
    int n_max() const override { return n_max_; }

    void begin(const std::vector<int32_t>& prompt) override {
        if (t_->used * 4 > kTableSize) {
            BEE_LOG_WARN("ngram-mod: table more than 25%% full, resetting it");
            t_->reset();
        }
        add_windows(prompt, 0);
        n_added_ = (int)prompt.size();
        low_streak_ = dead_streak_ = 0;
        dead_ = false;
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        const std::vector<int32_t>& h = req.history;
        if (dead_ || (int)h.size() + 1 < n_) return;
        if ((int)h.size() - n_added_ >= kRefreshChunk) {  // chunked insertion of new windows
            add_windows(h, std::max(0, n_added_ - n_));
            n_added_ = (int)h.size();
        }
        win_.assign(h.end() - (n_ - 1), h.end());
        win_.push_back(req.id_last);
        const int cap = std::min(n_max_, req.n_max);
        drafted_.clear();
        while ((int)drafted_.size() < cap) {
            const int32_t t = t_->next[ModTable::index(&win_[win_.size() - n_], n_)];
            if (t < 0) break;
            drafted_.push_back(t);
            win_.push_back(t);
        }
        if ((int)drafted_.size() < std::min(n_min_, cap) || drafted_.empty()) return;
        out.add_chain(drafted_.data(), (int)drafted_.size());
        last_len_ = (int)drafted_.size();
    }

    void accept(int n_accepted, bool is_other) override {
        if (is_other) return;  // newer upstream: only its own drafts count
        // Original PR: acceptance under half three times in a row resets the shared table.
        low_streak_ = n_accepted * 2 < last_len_ ? low_streak_ + 1 : 0;
        if (low_streak_ >= 3) {
            t_->reset();
            low_streak_ = 0;
        }
        // Newer upstream: after dead_off drafts with nothing accepted, stop for this request.
        dead_streak_ = n_accepted == 0 ? dead_streak_ + 1 : 0;
        if (dead_off_ > 0 && dead_streak_ >= dead_off_) dead_ = true;
    }

private:
    // Adds every window of toks starting at or after `from` that has a follower.
    void add_windows(const std::vector<int32_t>& toks, int from) {
        for (int i = from; i + n_ < (int)toks.size(); i++) t_->add(&toks[i], n_, toks[i + n_]);
    }

    ModTable* t_;
    int n_, n_min_, n_max_, dead_off_;
    int n_added_ = 0, last_len_ = 0, low_streak_ = 0, dead_streak_ = 0;
    bool dead_ = false;
    std::vector<int32_t> win_, drafted_;
};

}  // namespace

std::unique_ptr<DrafterShared> make_ngram_mod_shared(const SpecParams&, const Model&) {
    return std::make_unique<ModTable>();
}

std::unique_ptr<Drafter> make_ngram_mod(const DrafterEnv& env) {
    return std::make_unique<NgramMod>(env.params, static_cast<ModTable*>(env.shared));
}

extern const DrafterKind kDrafterNgramMod = {"ngram-mod",
                                             "",
                                             "ngram_mod",
                                             {{"--spec-ngram-mod-n-match", "N", "ngram-mod lookup length [24]",
                                               [](SpecParams& p) { return &p.ngram_mod_n_match; }, nullptr, 1, 1024},
                                              {"--spec-ngram-mod-n-min", "N", "ngram-mod shortest draft [48]",
                                               [](SpecParams& p) { return &p.ngram_mod_n_min; }, nullptr, 0, 1024},
                                              {"--spec-ngram-mod-n-max", "N", "ngram-mod longest draft [64]",
                                               [](SpecParams& p) { return &p.ngram_mod_n_max; }, nullptr, 0, 1024}},
                                             nullptr,
                                             nullptr,
                                             false,
                                             make_ngram_mod,
                                             make_ngram_mod_shared};

}  // namespace bee
