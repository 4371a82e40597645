// spec/drafters/ngram_cache: lookup decoding (modelfree-and-server.md A.3.1, PR #5479/#6828). Three
// n-gram statistics — the request's own context (built as it goes), a dynamic cache (-lcd, earlier
// generations; merged with each finished request and written back) and a static corpus cache (-lcs,
// read-only, 2-gram keys, a prior) — propose up to 8 tokens one at a time.
#include <algorithm>
#include <cstdio>
#include <mutex>

#include "spec/drafters/drafters.h"
#include "spec/drafters/ngram_cache.h"
#include "spec/registry.h"

namespace bee {

namespace {

constexpr int kDraftLen = 8;  // hard-coded in llama.cpp
// Thresholds per key length 1..4: lax for the context cache, strict for the dynamic one.
constexpr int kLaxSample[4] = {2, 2, 1, 1}, kLaxPercent[4] = {66, 50, 50, 50};
constexpr int kStrictSample[4] = {4, 3, 2, 2}, kStrictPercent[4] = {75, 66, 66, 66};

struct CacheFiles : DrafterShared {
    NgramCache stat, dyn;
    std::string dyn_path;
    std::mutex mu;  // end() of several slots may merge into dyn
};

int32_t static_count(const NgramHistogram* st, int32_t tok) {
    if (!st) return 0;
    auto it = st->find(tok);
    return it == st->end() ? 0 : it->second;
}

// The best continuation in `c` for the longest key that passes the thresholds, or -1.
int32_t try_cache(const NgramCache& c, const std::vector<int32_t>& seq, const NgramHistogram* st, const int* min_sample,
                  const int* min_percent) {
    for (int n = kNgramCacheMax; n >= 1; n--) {
        if ((int)seq.size() < n) continue;
        auto it = c.find(ngram_key(&seq[seq.size() - n], n));
        if (it == c.end()) continue;
        int64_t total = 0, best_score = -1;
        int32_t best = -1, best_count = 0;
        for (const auto& [tok, count] : it->second) {
            total += count;
            const int32_t sc = static_count(st, tok);
            const int64_t score = (int64_t)count * (sc > 0 ? 100 * (int64_t)sc : 1);
            if (score > best_score || (score == best_score && tok < best)) {
                best_score = score;
                best = tok;
                best_count = count;
            }
        }
        if (total >= min_sample[n - 1] && 100 * (int64_t)best_count >= (int64_t)min_percent[n - 1] * total) return best;
    }
    return -1;
}

class NgramCacheDrafter : public Drafter {
public:
    explicit NgramCacheDrafter(CacheFiles* files) : f_(files) {}
    int n_max() const override { return kDraftLen; }

    void begin(const std::vector<int32_t>& prompt) override {
        ctx_.clear();
        ngram_cache_update(ctx_, prompt, 0);
        n_seen_ = (int)prompt.size();
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        const std::vector<int32_t>& h = req.history;
        // the context cache learns every token now in the cache (the one before id_last included)
        ngram_cache_update(ctx_, h, std::max(0, n_seen_));
        n_seen_ = (int)h.size();
        seq_.assign(h.begin(), h.end());
        seq_.push_back(req.id_last);
        const int cap = std::min(kDraftLen, req.n_max);
        int n = 0;
        while (n < cap) {
            const NgramHistogram* st = nullptr;
            if ((int)seq_.size() >= kNgramCacheStatic) {
                auto it = f_->stat.find(ngram_key(&seq_[seq_.size() - kNgramCacheStatic], kNgramCacheStatic));
                if (it != f_->stat.end()) st = &it->second;
            }
            int32_t t = try_cache(ctx_, seq_, st, kLaxSample, kLaxPercent);
            if (t < 0) t = try_cache(f_->dyn, seq_, st, kStrictSample, kStrictPercent);
            if (t < 0 && st) t = static_best(*st);
            if (t < 0) break;
            seq_.push_back(t);
            n++;
        }
        if (n > 0) out.add_chain(&seq_[seq_.size() - n], n);
    }

    void end(const std::vector<int32_t>&) override {
        if (f_->dyn_path.empty()) return;
        std::lock_guard<std::mutex> lock(f_->mu);
        ngram_cache_merge(f_->dyn, ctx_);
        ngram_cache_save(f_->dyn, f_->dyn_path);
    }

private:
    // Static only: its argmax if it has >= 2 samples and >= 50% of them.
    static int32_t static_best(const NgramHistogram& st) {
        int64_t total = 0;
        int32_t best = -1, best_count = 0;
        for (const auto& [tok, count] : st) {
            total += count;
            if (count > best_count || (count == best_count && tok < best)) {
                best = tok;
                best_count = count;
            }
        }
        return total >= 2 && 2 * (int64_t)best_count >= total ? best : -1;
    }

    CacheFiles* f_;
    NgramCache ctx_;
    int n_seen_ = 0;
    std::vector<int32_t> seq_;
};

}  // namespace

std::unique_ptr<DrafterShared> make_ngram_cache_shared(const SpecParams& p, const Model&) {
    auto f = std::make_unique<CacheFiles>();
    if (!p.lookup_cache_static.empty()) f->stat = ngram_cache_load(p.lookup_cache_static);
    f->dyn_path = p.lookup_cache_dynamic;
    if (!p.lookup_cache_dynamic.empty()) {
        if (FILE* probe = fopen(p.lookup_cache_dynamic.c_str(), "rb")) {  // a missing file starts empty
            fclose(probe);
            f->dyn = ngram_cache_load(p.lookup_cache_dynamic);
        }
    }
    return f;
}

std::unique_ptr<Drafter> make_ngram_cache(const DrafterEnv& env) {
    return std::make_unique<NgramCacheDrafter>(static_cast<CacheFiles*>(env.shared));
}

extern const DrafterKind kDrafterNgramCache =
    {"ngram-cache",
     "",
     "ngram_cache",
     {{"-lcs,--lookup-cache-static,--spec-ngram-cache-static", "FILE", "ngram-cache: static lookup cache (read only)",
       nullptr, [](SpecParams& p) { return &p.lookup_cache_static; }},
      {"-lcd,--lookup-cache-dynamic,--spec-ngram-cache-dynamic", "FILE",
       "ngram-cache: dynamic lookup cache (read, then updated with each generation)", nullptr,
       [](SpecParams& p) { return &p.lookup_cache_dynamic; }}},
     nullptr,
     nullptr,
     false,
     make_ngram_cache,
     make_ngram_cache_shared};

}  // namespace bee
