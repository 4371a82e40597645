// sample/grammar: the pushdown matcher over code points (see grammar.h).
#include "sample/grammar.h"

#include <algorithm>
#include <unordered_set>

#include "base/error.h"

namespace bee {

namespace {

// The smallest code point that needs 1 + n bytes (anything smaller written that long is overlong).
constexpr uint32_t kMinOfLength[4] = {0, 0x80, 0x800, 0x10000};

// Decodes the next UTF-8 lead byte: *bits = its payload, returns the continuation bytes that follow
// (-1: not a lead byte).
int utf8_lead(unsigned char c, uint32_t* bits) {
    if (c < 0x80) return *bits = c, 0;
    if ((c >> 5) == 6) return *bits = c & 0x1f, 1;
    if ((c >> 4) == 14) return *bits = c & 0x0f, 2;
    if ((c >> 3) == 30) return *bits = c & 0x07, 3;
    return -1;
}

}  // namespace

bool GrammarElem::matches(uint32_t cp) const {
    bool in = false;
    for (const auto& [lo, hi] : ranges) {
        if (cp >= lo && cp <= hi) {
            in = true;
            break;
        }
    }
    if (negated) return !in && cp < kGrammarTokenBase;  // a negated class never matches a whole token
    return in;
}

// The work of taking one character (or of the grammar's start), against kGrammarMaxStepWork. note: past
// kMemoAfter units the expansion remembers each state it branched from, so paths that converge (a nullable
// item repeated inside a nullable repetition) are expanded once instead of once per path.
struct GrammarMatcher::Budget {
    static constexpr size_t kMemoAfter = 256;
    struct Hash {
        size_t operator()(const Stack& st) const {
            uint64_t h = 1469598103934665603ull;  // FNV-1a over the element indices
            for (uint32_t e : st) h = (h ^ e) * 1099511628211ull;
            return (size_t)h;
        }
    };
    size_t work = 0;
    std::unordered_set<Stack, Hash> seen;
    bool spend(size_t n) { return (work += n) <= kGrammarMaxStepWork; }
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
    Budget b;
    for (uint32_t alt : g_->rules[g_->root]) {
        if (!expand(Stack{alt}, stacks_, b))
            fail(
                "grammar: reaching its first characters takes more than %zu steps (the matcher's step-work budget); "
                "make it less ambiguous and shallower: avoid optional repetitions nested in repetitions, e.g. "
                "(\"a\"{0,9}){0,9}, and long chains of rules that each start with the next",
                kGrammarMaxStepWork);
    }
    std::vector<Stack> start;
    start.swap(stacks_);
    std::sort(start.begin(), start.end());
    start.erase(std::unique(start.begin(), start.end()), start.end());
    set_stacks(start);
    if (stacks_.size() > kGrammarMaxStacks)
        fail(
            "grammar: its start can be parsed %zu ways at once, above the matcher's budget of %zu live stacks; "
            "use fewer alternatives at one point (e.g. a shared prefix factored out) and avoid nesting optional "
            "repetitions",
            stacks_.size(), kGrammarMaxStacks);
}

// Moves a stack forward until its top is a code point set (or it is empty: the grammar is complete),
// branching on every alternative of a referenced rule; false when the budget runs out. note: a reference
// followed by the end of its alternative is replaced rather than stacked (tail call), so right recursion
// (`x*`) keeps stacks flat; branches wait on an explicit list, so deep grammars cannot exhaust the C++ stack.
bool GrammarMatcher::expand(Stack first, std::vector<Stack>& out, Budget& b) const {
    std::vector<Stack> todo;
    todo.push_back(std::move(first));
    while (!todo.empty()) {
        Stack st = std::move(todo.back());
        todo.pop_back();
        for (;;) {
            if (!b.spend(1)) return false;
            if (st.empty() || g_->elems[st.back()].kind == GrammarElem::chars) {
                out.push_back(std::move(st));
                break;
            }
            const GrammarElem& e = g_->elems[st.back()];
            if (e.kind == GrammarElem::end) {
                st.pop_back();
                continue;
            }
            const std::vector<uint32_t>& alts = g_->rules[e.rule_id];
            if (alts.size() > 1 && b.work > Budget::kMemoAfter) {
                if (!b.spend(st.size())) return false;
                if (!b.seen.insert(st).second) break;  // this state was expanded already in this step
            }
            const uint32_t next = st.back() + 1;
            if (g_->elems[next].kind == GrammarElem::end) st.pop_back();
            else st.back() = next;
            for (size_t i = 0; i + 1 < alts.size(); i++) {
                if (!b.spend(st.size() + 1)) return false;
                todo.push_back(st);
                todo.back().push_back(alts[i]);
            }
            st.push_back(alts.back());
        }
    }
    return true;
}

// `out` = every stack of `in` advanced by one code point; false if none can take it or a budget runs out.
bool GrammarMatcher::step(const std::vector<Stack>& in, uint32_t cp, std::vector<Stack>& out) const {
    out.clear();
    last_refusal_ = nullptr;
    Budget b;
    for (const Stack& st : in) {
        if (st.empty() || !g_->elems[st.back()].matches(cp)) continue;
        Stack moved = st;
        moved.back()++;
        if (!b.spend(st.size()) || !expand(std::move(moved), out, b)) {
            work_done_ += b.work;
            budget_hit_ = last_refusal_ = "step-work";
            return false;
        }
    }
    work_done_ += b.work;
    if (out.empty()) return false;
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (out.size() > kGrammarMaxStacks) {
        budget_hit_ = last_refusal_ = "live-stack";
        return false;
    }
    return true;
}

// Installs new stacks (taking them from `stacks`) and the ASCII characters they can take next.
void GrammarMatcher::set_stacks(std::vector<Stack>& stacks) {
    stacks_.swap(stacks);
    refused_first_.clear();
    ascii_next_[0] = ascii_next_[1] = 0;
    for (const Stack& st : stacks_) {
        if (st.empty()) continue;
        const GrammarElem& e = g_->elems[st.back()];
        uint64_t bits[2] = {0, 0};
        for (const auto& [lo, hi] : e.ranges)
            for (uint32_t c = lo; c <= std::min<uint32_t>(hi, 127); c++) bits[c >> 6] |= 1ull << (c & 63);
        ascii_next_[0] |= e.negated ? ~bits[0] : bits[0];
        ascii_next_[1] |= e.negated ? ~bits[1] : bits[1];
    }
}

// Fast path for the vocabulary scan: most tokens fail on their first character, checked in one bit
// test whatever the number of stacks.
bool GrammarMatcher::quick_reject(std::string_view bytes) const {
    if (partial_left_ > 0 || bytes.empty()) return false;
    const unsigned char c = (unsigned char)bytes[0];
    if (c >= 0x80) return false;  // multi-byte first characters take the full path
    return !((ascii_next_[c >> 6] >> (c & 63)) & 1);
}

// Takes `bytes` from the current state: `stacks` gets the new stacks (`moved` false: no character was
// completed, the stacks are still stacks_), cp/min/left the partial-character state. The state itself is
// not changed, so a rejected text costs no copy of the stacks.
bool GrammarMatcher::advance(std::string_view bytes, std::vector<Stack>& stacks, bool& moved, uint32_t& cp,
                             uint32_t& min, int& left) const {
    std::vector<Stack> next;
    moved = false;
    for (unsigned char c : bytes) {
        if (left > 0) {
            if ((c & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3f);
            left--;
        } else {
            left = utf8_lead(c, &cp);
            if (left < 0) return false;
            min = kMinOfLength[left];
        }
        if (left > 0) continue;
        // Overlong forms (0xC1 0xB2 for 'r'), surrogates and values past U+10FFFF are not characters.
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        if (!moved && refused_first(cp)) return false;
        if (!step(moved ? stacks : stacks_, cp, next)) {
            if (!moved) refuse_first(cp);
            return false;
        }
        stacks.swap(next);
        moved = true;
    }
    return left == 0 || partial_fits(moved ? stacks : stacks_, cp, min, left);
}

// Whether text ending inside a character (cp: its leading bits, `left` continuation bytes still to come)
// can continue: some stack must take a code point with these leading bits.
bool GrammarMatcher::partial_fits(const std::vector<Stack>& stacks, uint32_t cp, uint32_t min, int left) const {
    // note: hi is capped at U+10FFFF, else a lead byte such as 0xF4 would reach the whole-token code
    // points (kGrammarTokenBase + id) and byte tokens could spell the start of a `<[id]>` terminal.
    const uint32_t lo = std::max(cp << (6 * left), min);
    const uint32_t hi = std::min<uint32_t>((cp << (6 * left)) | ((1u << (6 * left)) - 1), 0x10FFFF);
    if (lo > hi) return false;
    for (const Stack& st : stacks) {
        if (st.empty()) continue;
        const GrammarElem& e = g_->elems[st.back()];
        if (e.negated) return true;  // note: a negated set is assumed to leave something in [lo, hi]
        for (const auto& [a, b] : e.ranges)
            if (a <= hi && b >= lo) return true;
    }
    return false;
}

// Whether a first character is known to be refused from the current state (noting the budget that
// refused it, if one did). note: remembered, so that a vocabulary scan pays a refused first character once.
bool GrammarMatcher::refused_first(uint32_t cp) const {
    auto it = refused_first_.find(cp);
    if (it == refused_first_.end()) return false;
    if (it->second) budget_hit_ = it->second;
    return true;
}

void GrammarMatcher::refuse_first(uint32_t cp) const { refused_first_[cp] = last_refusal_; }

// One byte of a token from level `from` to level `to` (= level `at`): the same checks, in the same order,
// as advance() makes for that byte; a completed character steps the stacks into own[at].
bool GrammarMatcher::take_byte(unsigned char c, const ScanLevel& from, ScanLevel& to, int at,
                               std::vector<std::vector<Stack>>& own) const {
    to = from;
    if (from.left > 0) {
        if ((c & 0xc0) != 0x80) return false;
        to.cp = (from.cp << 6) | (c & 0x3f);
        to.left = from.left - 1;
    } else {
        to.left = utf8_lead(c, &to.cp);
        if (to.left < 0) return false;
        to.min = kMinOfLength[to.left];
    }
    if (to.left > 0) return true;
    const uint32_t cp = to.cp;
    if (cp < to.min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    const bool first = from.src < 0;  // no character completed yet: the stacks are still stacks_
    if (first && refused_first(cp)) return false;
    if (!step(first ? stacks_ : own[from.src], cp, own[at])) {
        if (first) refuse_first(cp);
        return false;
    }
    to.src = at;
    return true;
}

bool GrammarMatcher::accept(std::string_view bytes) {
    std::vector<Stack> stacks;
    bool moved;
    uint32_t cp = partial_cp_, min = partial_min_;
    int left = partial_left_;
    if (!advance(bytes, stacks, moved, cp, min, left)) return false;
    if (moved) set_stacks(stacks);
    partial_min_ = min;
    partial_cp_ = cp;
    partial_left_ = left;
    return true;
}

bool GrammarMatcher::allows(std::string_view bytes) const {
    if (quick_reject(bytes)) return false;
    std::vector<Stack> stacks;
    bool moved;
    uint32_t cp = partial_cp_, min = partial_min_;
    int left = partial_left_;
    return advance(bytes, stacks, moved, cp, min, left);
}

bool GrammarMatcher::names_token(int32_t id) const {
    return std::binary_search(g_->tokens.begin(), g_->tokens.end(), id);
}

bool GrammarMatcher::accept_token(int32_t id) {
    std::vector<Stack> next;
    if (partial_left_ > 0 || !names_token(id) || !step(stacks_, kGrammarTokenBase + (uint32_t)id, next)) return false;
    set_stacks(next);
    return true;
}

bool GrammarMatcher::allows_token(int32_t id) const {
    std::vector<Stack> next;
    return partial_left_ == 0 && names_token(id) && step(stacks_, kGrammarTokenBase + (uint32_t)id, next);
}

bool GrammarMatcher::can_end() const {
    if (partial_left_ > 0) return false;
    return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

std::vector<uint32_t> GrammarMatcher::state_key() const {
    std::vector<uint32_t> key = {partial_cp_, (uint32_t)partial_left_, partial_min_};
    for (const Stack& st : stacks_) {
        key.push_back(UINT32_MAX);  // separator: no element index is this large
        key.insert(key.end(), st.begin(), st.end());
    }
    return key;
}

}  // namespace bee
