// spec/drafters/ngram_map: ngram-map-k and ngram-map-k4v (modelfree-and-server.md A.3.3, PR #18471).
// Both find an earlier occurrence of the last N tokens through a hash index (verified on hit, linear
// scan on a miss) and keep per-key statistics. map-k drafts the M tokens after the match, shortened to
// the length last accepted for that key; map-k4v classifies what followed every occurrence of the key
// into up to 4 value slots and drafts only when one value dominates (max >= 2 x the rest), copying
// the dominant value (upstream, as coded, copies what follows the current match instead).
// The two share this structure, so they share this file; each reads its own settings.
#include "spec/drafters/drafters.h"
#include "spec/registry.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace bee {

namespace {

constexpr uint32_t kIndexSize = 1u << 18;
constexpr int32_t kMaxKeyNum = 16380;

uint32_t hash_ngram(const int32_t* t, int n) {
    uint32_t h = 0;
    for (int i = 0; i < n; i++) h = h * 2654435761u + (uint32_t)t[i];
    return h;
}

class NgramMap : public Drafter {
public:
    NgramMap(const NgramSizes& s, bool key_only)
        : n_(std::max(1, s.size_n)), m_(std::max(1, s.size_m)), min_hits_(s.min_hits), key_only_(key_only) {}
    int n_max() const override { return m_; }

    void begin(const std::vector<int32_t>&) override {
        index_.assign(kIndexSize, 0);
        keys_.clear();
        n_indexed_ = 0;
        last_ = nullptr;
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        last_ = nullptr;
        seq_.assign(req.history.begin(), req.history.end());
        seq_.push_back(req.id_last);
        const int L = (int)seq_.size();
        if (L < 2 * n_ + m_) return;
        if (index_.empty()) begin({});
        const int limit = L - n_ - m_ - 1;  // a match must start at or before this (M tokens follow it)
        for (; n_indexed_ <= limit; n_indexed_++) {
            uint32_t& slot = index_[hash_ngram(&seq_[n_indexed_], n_) % kIndexSize];
            if (slot == 0) slot = (uint32_t)n_indexed_ + 1;  // first writer wins
        }
        const int32_t* key = &seq_[L - n_];
        const uint32_t h = hash_ngram(key, n_);
        int match = -1;
        const uint32_t hit = index_[h % kIndexSize];
        if (hit > 0 && same(hit - 1, key)) match = (int)hit - 1;
        for (int j = limit; match < 0 && j >= 0; j--)
            if (same(j, key)) match = j;
        if (match < 0) return;

        Key& k = keys_[h];
        if (k.num == 0 || !same(k.pos, key)) k = Key{match};  // new key (or a hash collision: restart it)
        k.num = std::min(k.num + 1, kMaxKeyNum);
        int from = match + n_, slot = 0;
        if (key_only_) {
            if (k.nv == 0) k.v[k.nv++] = {match + n_, 1, m_};
        } else {
            if (k.num < min_hits_) return;
            update_values(k, limit);
            int best = 0, total = 0;
            for (int i = 0; i < k.nv; i++) {
                total += k.v[i].count;
                if (k.v[i].count > k.v[best].count) best = i;
            }
            if (k.nv == 0) return;
            const int rest = total - k.v[best].count;
            if (rest > 0 && k.v[best].count < 2 * rest) return;  // no dominant continuation
            slot = best;
            from = k.v[best].pos;
        }
        const int n = std::min({m_, k.v[slot].n_acc, L - from, req.n_max});
        if (n <= 0) return;
        out.add_chain(&seq_[from], n);
        last_ = &k.v[slot];
    }

    void accept(int n_accepted, bool is_other) override {
        // Bee skips n = 0 (upstream's 0 would silence the key for the rest of the request).
        if (last_ && !is_other && n_accepted > 0) last_->n_acc = n_accepted;
        last_ = nullptr;
    }

private:
    struct Value {
        int32_t pos = 0;    // where the M-token continuation starts
        int32_t count = 0;  // occurrences seen
        int32_t n_acc = 0;  // tokens accepted the last time it was drafted (the next draft's length)
    };
    struct Key {
        explicit Key(int32_t p = 0) : pos(p) {}
        int32_t pos;           // a position where the key occurs (to verify hash hits)
        int32_t num = 0;       // hits
        int32_t stat_idx = 0;  // occurrences before this position are already counted
        Value v[4];
        int nv = 0;
    };

    bool same(int pos, const int32_t* key) const {
        return pos >= 0 && pos + n_ <= (int)seq_.size() && memcmp(&seq_[pos], key, sizeof(int32_t) * n_) == 0;
    }

    // Counts the continuation of every occurrence of the key in [stat_idx, last] into the value slots.
    // note: up to the newest usable occurrence, not only the (oldest, first-writer) indexed match.
    void update_values(Key& k, int last) {
        const int32_t* key = &seq_[seq_.size() - n_];
        for (int q = k.stat_idx; q <= last; q++) {
            if (!same(q, key) || q + n_ + m_ > (int)seq_.size()) continue;
            const int32_t* val = &seq_[q + n_];
            int i = 0;
            while (i < k.nv && memcmp(&seq_[k.v[i].pos], val, sizeof(int32_t) * m_) != 0) i++;
            if (i < k.nv) k.v[i].count++;
            else if (k.nv < 4) k.v[k.nv++] = {q + n_, 1, m_};
        }
        k.stat_idx = last + 1;
    }

    int n_, m_, min_hits_;
    bool key_only_;
    std::vector<int32_t> seq_;     // history + id_last of the current step
    std::vector<uint32_t> index_;  // hash -> first position + 1 (0: empty)
    int n_indexed_ = 0;
    std::unordered_map<uint32_t, Key> keys_;
    Value* last_ = nullptr;  // the value slot behind the last draft
};

}  // namespace

std::unique_ptr<Drafter> make_ngram_map_k(const DrafterEnv& env) {
    return std::make_unique<NgramMap>(env.params.ngram_map_k, true);
}

std::unique_ptr<Drafter> make_ngram_map_k4v(const DrafterEnv& env) {
    return std::make_unique<NgramMap>(env.params.ngram_map_k4v, false);
}

extern const DrafterKind kDrafterNgramMapK =
    {"ngram-map-k",
     "",
     "ngram_map_k",
     {{"--spec-ngram-map-k-size-n", "N", "key length N: tokens that must match [12]",
       [](SpecParams& p) { return &p.ngram_map_k.size_n; }, nullptr, 1, 1024},
      {"--spec-ngram-map-k-size-m", "N", "draft length M [48]", [](SpecParams& p) { return &p.ngram_map_k.size_m; },
       nullptr, 1, 1024},
      {"--spec-ngram-map-k-min-hits", "N", "key occurrences before drafting (map-k4v) [1]",
       [](SpecParams& p) { return &p.ngram_map_k.min_hits; }, nullptr, 1, 1 << 20}},
     nullptr,
     nullptr,
     false,
     make_ngram_map_k,
     nullptr};

extern const DrafterKind kDrafterNgramMapK4v =
    {"ngram-map-k4v",
     "",
     "ngram_map_k4v",
     {{"--spec-ngram-map-k4v-size-n", "N", "key length N: tokens that must match [12]",
       [](SpecParams& p) { return &p.ngram_map_k4v.size_n; }, nullptr, 1, 1024},
      {"--spec-ngram-map-k4v-size-m", "N", "draft length M [48]", [](SpecParams& p) { return &p.ngram_map_k4v.size_m; },
       nullptr, 1, 1024},
      {"--spec-ngram-map-k4v-min-hits", "N", "key occurrences before drafting (map-k4v) [1]",
       [](SpecParams& p) { return &p.ngram_map_k4v.min_hits; }, nullptr, 1, 1 << 20}},
     nullptr,
     nullptr,
     false,
     make_ngram_map_k4v,
     nullptr};

}  // namespace bee
