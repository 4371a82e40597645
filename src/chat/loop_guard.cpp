// chat/loop_guard: the three loop detectors of spec A.4 (periodic tail, n-gram dominance, low entropy)
// and the per-generation state machine that runs them every `check_interval` tokens.
#include "chat/loop_guard.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "base/error.h"

namespace bee::chat {

LoopGuardMode parse_loop_guard_mode(std::string_view text, std::string_view where) {
    if (text == "off") return LoopGuardMode::Off;
    if (text == "force-close") return LoopGuardMode::ForceClose;
    if (text == "stop") return LoopGuardMode::Stop;
    fail("%.*s: unknown reasoning loop guard mode '%.*s' (use off, force-close or stop)", int(where.size()),
         where.data(), int(text.size()), text.data());
}

const char* loop_guard_mode_name(LoopGuardMode mode) {
    switch (mode) {
        case LoopGuardMode::Off: return "off";
        case LoopGuardMode::ForceClose: return "force-close";
        case LoopGuardMode::Stop: return "stop";
    }
    return "?";
}

const char* loop_action_name(LoopAction action) {
    switch (action) {
        case LoopAction::None: return "none";
        case LoopAction::ForceClose: return "force-close";
        case LoopAction::Stop: return "stop";
    }
    return "?";
}

void LoopGuardParams::validate(std::string_view where) const {
    auto bad = [&](const char* what) {
        fail(
            "%.*s: invalid reasoning loop guard settings: %s (min_tokens=%d window=%d max_period=%d "
            "min_coverage=%d check_interval=%d interventions=%d)",
            int(where.size()), where.data(), what, min_tokens, window, max_period, min_coverage, check_interval,
            interventions);
    };
    if (min_tokens <= 0 || window <= 0 || max_period <= 0 || min_coverage <= 0 || check_interval <= 0 ||
        interventions <= 0)
        bad("every value must be positive");
    if (window < min_coverage) bad("window must be >= min_coverage");
    if (max_period > window / 3) bad("max_period must be <= window / 3");
    if (min_tokens < min_coverage) bad("min_tokens must be >= min_coverage");
}

// Detector 1: the tail repeats itself with some period p, up to a small mismatch rate.
bool loop_periodic_tail(const std::vector<int32_t>& tail, const LoopGuardParams& params, int32_t* period) {
    const int64_t n = int64_t(tail.size());
    const int64_t max_p = std::min<int64_t>(params.max_period, n / 3);
    for (int64_t p = 1; p <= max_p; ++p) {
        const int64_t coverage = n - p;
        if (coverage < params.min_coverage) continue;
        // Allowed mismatch rate grows with the period: long periods hold more incidental variation.
        const double rate = p <= 8 ? 0.005 : p <= 64 ? 0.01 : 0.02;
        const int64_t allowed = int64_t(rate * double(coverage));
        int64_t mismatches = 0;
        for (int64_t i = p; i < n && mismatches <= allowed; ++i) mismatches += tail[i] != tail[i - p];
        if (mismatches <= allowed) {
            if (period) *period = int32_t(p);
            return true;
        }
    }
    return false;
}

// Covered length of the union of [start, start + len) intervals (starts may be unsorted).
static int64_t covered_length(std::vector<int64_t> starts, int64_t len) {
    std::sort(starts.begin(), starts.end());
    int64_t covered = 0, end = -1;
    for (int64_t s : starts) {
        const int64_t from = std::max(s, end);
        if (s + len > from) covered += s + len - from;
        end = std::max(end, s + len);
    }
    return covered;
}

// Detector 2: most of the tail is made of n-grams that already occurred earlier in the tail.
bool loop_ngram_dominance(const std::vector<int32_t>& tail, const LoopGuardParams& params) {
    const int64_t n = int64_t(tail.size());
    std::vector<std::pair<uint64_t, int64_t>> keyed;  // (hash of the n-gram starting at i, i)
    for (int64_t size : {8, 16, 32}) {
        if (n < 2 * size) continue;
        // note: polynomial rolling hash, then sort: O(n log n) per check instead of a hash map.
        constexpr uint64_t kBase = 1000003;
        uint64_t top = 1;
        for (int64_t k = 1; k < size; ++k) top *= kBase;
        keyed.clear();
        uint64_t h = 0;
        for (int64_t i = 0; i < n; ++i) {
            if (i >= size) h -= top * uint32_t(tail[size_t(i - size)]);
            h = h * kBase + uint32_t(tail[size_t(i)]);
            if (i + 1 >= size) keyed.emplace_back(h, i + 1 - size);
        }
        std::sort(keyed.begin(), keyed.end());
        std::vector<int64_t> starts;
        for (size_t a = 0; a < keyed.size();) {
            size_t b = a;
            while (b < keyed.size() && keyed[b].first == keyed[a].first) ++b;
            // keyed[a] is the earliest start with this hash; later equal n-grams repeat it.
            const int64_t first = keyed[a].second;
            bool repeated = false;
            for (size_t k = a + 1; k < b; ++k) {
                const int64_t at = keyed[k].second;
                if (!std::equal(tail.begin() + at, tail.begin() + at + size, tail.begin() + first)) continue;
                starts.push_back(at);
                repeated = true;
            }
            if (repeated) starts.push_back(first);
            a = b;
        }
        const int64_t covered = covered_length(std::move(starts), size);
        if (covered >= params.min_coverage && 2 * covered >= n) return true;
    }
    return false;
}

// Detector 3: the last 1024 tokens use very few distinct ids, dominated by a handful.
bool loop_low_entropy(const std::vector<int32_t>& tail, const LoopGuardParams& params) {
    constexpr int64_t kSpan = 1024;
    const int64_t n = int64_t(tail.size());
    if (n < kSpan || n < params.min_coverage) return false;
    std::unordered_map<int32_t, int64_t> counts;
    for (int64_t i = n - kSpan; i < n; ++i) {
        ++counts[tail[size_t(i)]];
        if (counts.size() > 32) return false;
    }
    std::vector<int64_t> freq;
    for (const auto& kv : counts) freq.push_back(kv.second);
    std::sort(freq.rbegin(), freq.rend());
    int64_t top = 0;
    for (size_t i = 0; i < freq.size() && i < 8; ++i) top += freq[i];
    return top * 100 >= kSpan * 95;
}

std::vector<int32_t> LoopGuard::Region::tail() const {
    // Until the ring is full `next` equals its size, so this rotation is the identity.
    std::vector<int32_t> out(ring.begin() + long(next), ring.end());
    out.insert(out.end(), ring.begin(), ring.begin() + long(next));
    return out;
}

LoopGuard::LoopGuard(const LoopGuardParams& params) : params_(params) {
    params_.validate("reasoning loop guard");
    reasoning_.ring.reserve(size_t(params_.window));
    visible_.ring.reserve(size_t(params_.window));
}

LoopVerdict LoopGuard::check(const Region& region, bool reasoning) const {
    LoopVerdict v;
    const std::vector<int32_t> tail = region.tail();
    if (loop_periodic_tail(tail, params_, &v.period)) v.reason = "periodic_tail";
    else if (reasoning && loop_ngram_dominance(tail, params_)) v.reason = "ngram_dominance";
    else if (loop_low_entropy(tail, params_)) v.reason = "low_entropy";
    else return v;
    const bool can_force =
        reasoning && params_.mode == LoopGuardMode::ForceClose && interventions_used_ < params_.interventions;
    v.action = can_force ? LoopAction::ForceClose : LoopAction::Stop;
    return v;
}

LoopVerdict LoopGuard::observe(int32_t token, bool in_reasoning) {
    if (params_.mode == LoopGuardMode::Off) return {};
    Region& r = in_reasoning ? reasoning_ : visible_;
    if (int64_t(r.ring.size()) < params_.window) {
        r.ring.push_back(token);
    } else {
        r.ring[r.next] = token;
    }
    r.next = (r.next + 1) % size_t(params_.window);
    ++r.seen;
    if (r.seen % params_.check_interval != 0) return {};
    if (in_reasoning && r.seen < params_.min_tokens) return {};
    LoopVerdict v = check(r, in_reasoning);
    if (v.action == LoopAction::ForceClose) {
        // The forced end tag closes this reasoning span: a later span starts from an empty tail.
        ++interventions_used_;
        r.ring.clear();
        r.next = 0;
    }
    return v;
}

}  // namespace bee::chat
