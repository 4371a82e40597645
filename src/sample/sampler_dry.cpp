// sample/sampler_dry: DRY, "don't repeat yourself" (llama.cpp's dry_* fields; the sampler first written for
// text-generation-webui). If the text ends with a sequence s of n tokens that occurred earlier followed by
// token t, then drawing t would extend the repeat: t loses multiplier · base^(n - allowed_length) when
// n >= allowed_length (the longest such n per token counts). A repeat never spans a sequence breaker: its n
// is capped at the longest tail of the text whose characters hold no breaker string.
//
// All the n at once: with r = the window reversed, the Z-function z[k] = the longest common prefix of r and
// r[k..] is the longest common suffix of the whole window and the window cut k tokens short, i.e. the
// repeat length for the token that followed that earlier end. One O(window) pass per sampled token.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <unordered_map>

#include "sample/sampler.h"

namespace bee {

namespace {

// z[k] = longest common prefix of s and s[k..] (z[0] = size).
std::vector<int32_t> z_function(const std::vector<int32_t>& s) {
    const int32_t n = (int32_t)s.size();
    std::vector<int32_t> z(n, 0);
    if (n == 0) return z;
    z[0] = n;
    for (int32_t k = 1, l = 0, r = 0; k < n; k++) {
        if (k < r) z[k] = std::min(r - k, z[k - l]);
        while (k + z[k] < n && s[z[k]] == s[k + z[k]]) z[k]++;
        if (k + z[k] > r) l = k, r = k + z[k];
    }
    return z;
}

}  // namespace

void bind_dry_breakers(SamplingParams& p, std::function<std::string(int32_t)> piece) {
    p.dry_breakers.reset();
    if (!p.dry_on() || p.dry_sequence_breakers.empty()) return;
    auto b = std::make_shared<DryBreakers>();
    b->strings = p.dry_sequence_breakers;
    b->piece = std::move(piece);
    p.dry_breakers = std::move(b);
}

// The number of last tokens (at most `limit`) whose text holds no breaker string.
size_t Sampler::dry_breaker_free_tail(size_t limit) const {
    const DryBreakers* b = params_.dry_breakers.get();
    if (!b || b->strings.empty() || !b->piece) return limit;
    size_t longest = 0;
    for (const std::string& s : b->strings) longest = std::max(longest, s.size());
    const std::vector<int32_t>& h = dry_history_;
    std::string tail;  // the text of the tokens taken so far (only its first `longest` bytes matter)
    for (size_t j = 0; j < limit && j < h.size(); j++) {
        const std::string piece = b->piece(h[h.size() - 1 - j]);
        // the new text: piece + tail; an occurrence not seen before starts inside the piece
        const std::string look = piece + tail.substr(0, longest > 0 ? longest - 1 : 0);
        for (const std::string& s : b->strings)
            if (!s.empty() && look.find(s) != std::string::npos) return j;
        tail = piece + tail.substr(0, longest);
    }
    return limit;
}

std::vector<std::pair<int32_t, float>> Sampler::dry_penalties() const {
    const SamplingParams& p = params_;
    std::vector<std::pair<int32_t, float>> out;
    const std::vector<int32_t>& h = dry_history_;
    if (!p.dry_on() || h.size() < 2) return out;
    const std::vector<int32_t> r(h.rbegin(), h.rend());
    const std::vector<int32_t> z = z_function(r);
    const size_t n = h.size();
    int32_t longest = 0;
    for (size_t k = 1; k < n; k++) longest = std::max(longest, z[k]);
    const int32_t allowed = std::max(p.dry_allowed_length, 1);
    if (longest < allowed) return out;
    const int32_t cap = (int32_t)dry_breaker_free_tail((size_t)longest);
    if (cap < allowed) return out;
    std::unordered_map<int32_t, int32_t> len;  // token -> the longest repeat it would extend
    for (size_t k = 1; k < n; k++) {
        const int32_t m = std::min(z[k], cap);
        if (m < allowed) continue;
        int32_t& l = len[h[n - k]];  // the earlier end is h[n - 1 - k]; the token after it is h[n - k]
        l = std::max(l, m);
    }
    for (const auto& [tok, m] : len) {
        const double pen = (double)p.dry_multiplier * std::pow((double)p.dry_base, (double)(m - allowed));
        out.push_back({tok, (float)std::min(pen, (double)FLT_MAX)});
    }
    std::sort(out.begin(), out.end());  // a fixed order: results never depend on the hash table
    return out;
}

}  // namespace bee
