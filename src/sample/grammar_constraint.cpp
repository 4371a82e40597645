// sample/grammar_constraint: grammar-constrained sampling over a vocabulary (see grammar.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "sample/grammar.h"

namespace bee {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const GrammarVocab> vocab)
    : m_(std::move(g)), vocab_(std::move(vocab)) {}

bool GrammarConstraint::allowed_at(const GrammarMatcher& m, int32_t id) const {
    if (id < 0 || (size_t)id >= vocab_->text.size()) return false;
    if (vocab_->is_eog[id]) return m.can_end();
    if (m.names_token(id) && m.allows_token(id)) return true;
    const std::string& t = vocab_->text[id];
    return !t.empty() && m.allows(t);
}

bool GrammarConstraint::advance(GrammarMatcher& m, int32_t id) const {
    if (id < 0 || (size_t)id >= vocab_->text.size()) return false;
    if (vocab_->is_eog[id]) return m.can_end();  // the state stays: the grammar is complete
    if (m.names_token(id) && m.accept_token(id)) return true;
    const std::string& t = vocab_->text[id];
    return !t.empty() && m.accept(t);
}

int32_t GrammarConstraint::sample(Sampler& s, const float* logits) {
    std::vector<TokenProb> dist;
    if (!distribution(s, logits, dist)) return -1;
    if (dist.size() == 1) return dist[0].id;  // as Sampler::sample: a single survivor needs no draw
    return s.draw(dist);
}

bool GrammarConstraint::distribution(Sampler& s, const float* logits, std::vector<TokenProb>& dist) {
    budget_hit_ = nullptr;
    m_.clear_budget_hit();
    dist.clear();
    const size_t n = vocab_->text.size();
    // note: a state whose whole-vocabulary verdict is known (the start, prepared off the inference thread,
    // or a state seen before) checks candidates by lookup.
    auto ok = [this, n](int32_t id, const Verdict* known) {
        return known ? id >= 0 && (size_t)id < n && known->ok[id] : allowed(id);
    };
    s.apply(logits);
    double sum = 0;
    const Verdict* known = known_verdict();
    // note: past a few candidates, one scan of the vocabulary as a trie is cheaper than checking each.
    constexpr size_t kFewCandidates = 256;
    if (!known && s.params().temp > 0 && s.candidates().size() > kFewCandidates) known = &allowed_all();
    for (const TokenProb& t : s.candidates()) {
        if (t.p > 0 && ok(t.id, known)) {
            dist.push_back(t);
            sum += t.p;
            if (s.params().temp <= 0) break;  // greedy: the best allowed one
        }
    }
    if (dist.empty()) {  // none of the chain's picks fits: mask the vocabulary and run the chain again
        const bool any = mask(s, logits);
        if (any) {
            s.apply(masked_.data());
            known = known_verdict();
            for (const TokenProb& t : s.candidates()) {
                if (t.p > 0 && ok(t.id, known)) {
                    dist.push_back(t);
                    sum += t.p;
                }
            }
        }
        if (dist.empty()) {
            if (!budget_hit_) budget_hit_ = m_.budget_hit();
            return false;
        }
    }
    for (TokenProb& t : dist) t.p = (float)(t.p / sum);
    return true;
}

// masked_ = logits with every token the chain must not see at -inf; false if no token is allowed.
// note: checking a token that the grammar allows costs a few microseconds (a copy of the matcher), so
// when the chain keeps only the best k tokens (greedy: 1; top-k) and no penalty reorders the logits,
// tokens are checked in descending logit order until k allowed ones are found (or, past the first 1024,
// all the rest are checked): the chain's result is the same as with the whole vocabulary masked. Other
// chains, and states whose verdict is known, mask from the whole-vocabulary verdict.
bool GrammarConstraint::mask(const Sampler& s, const float* logits) {
    const SamplingParams& p = s.params();
    const size_t n = (size_t)s.n_vocab();
    constexpr float kOff = -std::numeric_limits<float>::infinity();
    masked_.resize(n);
    const bool penalties = p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
    const size_t want = p.temp <= 0 ? 1 : p.top_k > 0 ? (size_t)p.top_k : 0;
    const Verdict* known = known_verdict();
    if (penalties || want == 0 || known) {
        const Verdict& v = known ? *known : allowed_all();
        if (v.budget) budget_hit_ = v.budget;
        bool any = false;
        for (size_t i = 0; i < n; i++) {
            const bool on = i < v.ok.size() && v.ok[i];
            masked_[i] = on ? logits[i] : kOff;
            any = any || on;
        }
        return any;
    }
    std::fill(masked_.begin(), masked_.end(), kOff);
    const size_t work0 = m_.work_done();
    order_.resize(n);
    for (size_t i = 0; i < n; i++) order_[i] = (int32_t)i;
    auto higher = [logits](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    constexpr size_t kSortedScan = 1024;  // past this, allowed tokens are rare: check the rest unsorted
    size_t found = 0, done = 0;
    while (found < want && done < std::min(n, kSortedScan)) {  // sort a growing prefix, check it in order
        const size_t next = std::min(n, std::max<size_t>(64, done * 4));
        const auto first = order_.begin() + (std::ptrdiff_t)done, last = order_.begin() + (std::ptrdiff_t)next;
        std::nth_element(first, last - 1, order_.end(), higher);  // note: O(n) per round, then sort the chunk
        std::sort(first, last, higher);
        for (size_t i = done; i < next && found < want; i++) {
            if (m_.work_done() - work0 > kGrammarMaxScanWork) {
                budget_hit_ = "scan-work";
                break;
            }
            const int32_t id = order_[i];
            if (allowed(id)) {
                masked_[id] = logits[id];
                found++;
            }
        }
        done = next;
    }
    if (found < want) {  // every token of the sorted prefix was checked; the rest all go to the chain
        const Verdict& v = allowed_all();
        if (v.budget) budget_hit_ = v.budget;
        for (size_t i = done; i < n; i++) {
            const int32_t id = order_[i];
            if (v.ok[id]) {
                masked_[id] = logits[id];
                found++;
            }
        }
    }
    return found > 0;
}

const GrammarConstraint::Verdict* GrammarConstraint::known_verdict() const {
    auto it = verdicts_.find(m_.state_key());
    return it == verdicts_.end() ? nullptr : &it->second;
}

// allowed() for every token, cached per matcher state (at most 32 states kept: a grammar's repeating
// states are few, and each verdict is n_vocab bytes). Inside a JSON string or a `[a-z]*` run the state is
// the same after every token, so its scan is paid once. Past kGrammarMaxScanWork the tokens not reached
// count as not allowed: a grammar whose every token costs a whole step budget cannot stall the slot.
const GrammarConstraint::Verdict& GrammarConstraint::allowed_all() {
    std::vector<uint32_t> key = m_.state_key();
    auto it = verdicts_.find(key);
    if (it != verdicts_.end()) return it->second;
    if (verdicts_.size() >= 32) verdicts_.clear();
    const size_t n = vocab_->text.size();
    Verdict v;
    v.ok.assign(n, 0);
    const bool complete = m_.allows_each(*vocab_, v.ok, kGrammarMaxScanWork);
    for (int32_t id : m_.grammar().tokens)  // whole tokens named by `<[id]>`
        if ((size_t)id < n && !vocab_->is_eog[id] && !v.ok[id] && m_.allows_token(id)) v.ok[id] = 1;
    const bool end = m_.can_end();
    for (size_t i = 0; i < n; i++)
        if (vocab_->is_eog[i]) v.ok[i] = end ? 1 : 0;
    v.budget = complete ? m_.budget_hit() : "scan-work";
    return verdicts_.emplace(std::move(key), std::move(v)).first->second;
}

bool GrammarConstraint::accept(int32_t id) {
    if (id < 0 || (size_t)id >= vocab_->text.size()) return false;
    if (vocab_->is_eog[id]) return m_.can_end();
    if (m_.names_token(id) && m_.accept_token(id)) return true;
    return m_.accept(vocab_->text[id]);  // forced tokens: empty text is accepted without moving
}

std::string GrammarConstraint::budget_message() const {
    if (!budget_hit_) return "";
    std::string what = budget_hit_;
    if (what == "step-work") what = strfmt("step-work budget (%zu stack elements per character)", kGrammarMaxStepWork);
    else if (what == "live-stack") what = strfmt("live-stack budget (%zu parses open at once)", kGrammarMaxStacks);
    else what = strfmt("scan-work budget (%zu steps to check the vocabulary for one token)", kGrammarMaxScanWork);
    return "grammar: the output stopped because every token that could continue it was over the matcher's " + what +
           "; make the grammar less ambiguous: factor shared prefixes out of alternatives, avoid optional "
           "repetitions nested in repetitions and long chains of rules that may match nothing";
}

}  // namespace bee
