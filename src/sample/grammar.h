// sample/grammar: GBNF grammars (llama.cpp's syntax, parsed in grammar_parse.cpp) as rules over Unicode
// code points, a pushdown matcher that follows generated text through them, and constrained sampling:
// only tokens whose text keeps the output inside the grammar may be drawn; end-of-generation tokens only
// once the grammar is complete.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sample/sampler.h"

namespace bee {

struct GrammarVocab;

// `<[id]>` in GBNF (llama.cpp's syntax) matches one whole token by id, e.g. a control token such as
// Mistral's [TOOL_CALLS], whose text is not generated text. Such a terminal is a `chars` element holding
// the code point kGrammarTokenBase + id: no text decodes past U+10FFFF, so only that token can match it,
// and negated classes never do. Only the ids a grammar names this way are ever allowed as tokens.
constexpr uint32_t kGrammarTokenBase = 0x110000;
constexpr uint32_t kGrammarMaxTokenId = 0xFFFFFF;

// Budgets that bound what any grammar text can cost. Grammar::parse throws Error naming the one exceeded
// (and how to simplify); during generation, text whose next character would exceed a matcher budget is
// treated as not allowed; if that leaves no token, the output ends and the budget is named
// (GrammarConstraint::budget_hit).
constexpr uint32_t kGrammarMaxNesting = 512;      // groups ( ... ) inside groups, in one rule
constexpr size_t kGrammarMaxSymbols = 1u << 19;   // elements once groups and {m,n} are expanded
constexpr size_t kGrammarMaxStacks = 4096;        // live matcher stacks (parses still open) after a character
constexpr size_t kGrammarMaxStepWork = 1u << 18;  // stack elements visited or copied to take one character
constexpr size_t kGrammarMaxScanWork = 1u << 25;  // the same, for all tokens checked to sample one token

// One element of a rule alternative. Literals become one `chars` element per code point.
struct GrammarElem {
    enum Kind : uint8_t { chars, rule, end };  // end: closes an alternative
    Kind kind = end;
    bool negated = false;                               // chars: matches what is NOT in ranges
    uint32_t rule_id = 0;                               // rule: the referenced rule
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // chars: inclusive code point ranges
    bool matches(uint32_t cp) const;
};

struct Grammar {
    // note: every alternative is a run of elements ending with an `end` element, all in one array, so
    // a matcher position is a single index.
    std::vector<GrammarElem> elems;
    std::vector<std::vector<uint32_t>> rules;  // rule id -> first element of each alternative
    std::vector<std::string> names;            // rule id -> name (generated helpers: "name_N")
    std::vector<int32_t> tokens;               // ids named by `<[id]>` terminals, sorted, unique
    uint32_t root = 0;

    // Parses GBNF text (rules `name ::= ...`, alternatives `|`, literals "..." with \n \t \r \\ \" \xHH
    // \uHHHH \UHHHHHHHH escapes, classes [a-z] [^...], `.`, whole tokens <[id]>, groups ( ), postfix * + ?
    // {m} {m,} {m,n},
    // # comments). Throws Error with line:column, what is wrong and how to fix it; also for an undefined
    // rule, a missing `root`, left recursion (which a pushdown matcher cannot follow), and a grammar over
    // one of the budgets above (checked at its start for the matcher ones).
    static std::shared_ptr<const Grammar> parse(std::string_view text);
};

// Where the generated text stands in a grammar: the set of pushdown stacks still alive. Copyable.
class GrammarMatcher {
public:
    // Throws Error if the grammar's start alone is over kGrammarMaxStacks or kGrammarMaxStepWork.
    explicit GrammarMatcher(std::shared_ptr<const Grammar> g);

    // Advances by UTF-8 bytes (a token's text; it may end inside a character). Returns false, leaving
    // the state unchanged, if the text cannot continue the output.
    bool accept(std::string_view bytes);
    // Whether accept(bytes) would succeed, without changing the state.
    bool allows(std::string_view bytes) const;
    // The same for one whole token named by a `<[id]>` terminal (false for ids the grammar never names,
    // and inside a partly seen UTF-8 character).
    bool accept_token(int32_t id);
    bool allows_token(int32_t id) const;
    bool names_token(int32_t id) const;
    // The output so far is a complete sentence of the grammar.
    bool can_end() const;
    // Identifies the state: equal keys allow exactly the same continuations (the stacks, flattened).
    std::vector<uint32_t> state_key() const;
    // Step work spent so far by this matcher (accepted or only checked text), for callers' budgets.
    size_t work_done() const { return work_done_; }
    const Grammar& grammar() const { return *g_; }
    // allows() for every token of `v` with text at once (grammar_scan.cpp): ok[id] = 1 where it holds, other
    // entries untouched. Walks the vocabulary as a prefix trie, so tokens sharing a prefix share its steps.
    // Stops once `max_work` step work is spent (the tokens not reached stay as they were): returns false.
    bool allows_each(const GrammarVocab& v, std::vector<uint8_t>& ok, size_t max_work) const;
    // The budget ("step-work" or "live-stack") that refused some text since the last clear_budget_hit(),
    // or nullptr: distinguishes a grammar over its budgets from one that is simply at a dead end.
    const char* budget_hit() const { return budget_hit_; }
    void clear_budget_hit() const { budget_hit_ = nullptr; }

private:
    using Stack = std::vector<uint32_t>;  // element indices; the back is the next element to match
    struct Budget;
    // The state after some bytes of a token: partial character, and where its stacks are (src < 0: stacks_,
    // else the scan's level `src`, the last at which a character was completed).
    struct ScanLevel {
        int src = -1;
        uint32_t cp = 0, min = 0;
        int left = 0;
    };
    bool take_byte(unsigned char c, const ScanLevel& from, ScanLevel& to, int at,
                   std::vector<std::vector<Stack>>& own) const;
    bool partial_fits(const std::vector<Stack>& stacks, uint32_t cp, uint32_t min, int left) const;
    bool refused_first(uint32_t cp) const;
    void refuse_first(uint32_t cp) const;
    bool expand(Stack st, std::vector<Stack>& out, Budget& b) const;
    bool step(const std::vector<Stack>& in, uint32_t cp, std::vector<Stack>& out) const;
    bool advance(std::string_view bytes, std::vector<Stack>& stacks, bool& moved, uint32_t& cp, uint32_t& min,
                 int& left) const;
    bool quick_reject(std::string_view bytes) const;
    void set_stacks(std::vector<Stack>& stacks);

    std::shared_ptr<const Grammar> g_;
    std::vector<Stack> stacks_;    // every top is a `chars` element, or the stack is empty (complete)
    uint64_t ascii_next_[2] = {};  // bit c: some stack takes ASCII character c next (quick_reject's test)
    mutable size_t work_done_ = 0;
    // Code points no stack can take next, each with the budget that refused it (nullptr: the grammar did).
    mutable std::map<uint32_t, const char*> refused_first_;
    mutable const char* budget_hit_ = nullptr;    // see budget_hit()
    mutable const char* last_refusal_ = nullptr;  // the budget that refused the last step() (nullptr: none)
    uint32_t partial_cp_ = 0;                     // bits of a character whose UTF-8 bytes are not all seen yet
    int partial_left_ = 0;                        // continuation bytes still expected
    uint32_t partial_min_ = 0;  // smallest code point its length may encode (shorter forms are overlong)
};

// Each token's text as the grammar sees it, built once per model by the caller (sample/ does not know
// the tokenizer). Empty text (control tokens): never allowed, except end-of-generation tokens. text and
// is_eog must not change once a GrammarConstraint uses the vocabulary.
struct GrammarVocab {
    std::vector<std::string> text;  // (n_vocab) decoded bytes of each token
    std::vector<uint8_t> is_eog;    // (n_vocab) 1: ends the generation (allowed once the grammar can end)

    // The vocabulary as a prefix trie, walked depth-first: the tokens with text (not end-of-generation) in
    // byte order, each with the length of the prefix it shares with the one before. Built on first use,
    // once, then shared by every constraint on this vocabulary (grammar_scan.cpp).
    struct Trie {
        std::vector<int32_t> order;  // token ids sorted by text
        std::vector<uint32_t> lcp;   // (order.size()) common prefix with the previous token (0 for the first)
        size_t max_len = 0;          // longest text, in bytes
    };
    const Trie& trie() const;

private:
    mutable std::once_flag trie_once_;
    mutable Trie trie_;
};

// Constrained sampling for one generation. Copyable: a server prepares one per request off the inference
// thread (the matcher at the grammar's start, prepare()'s verdicts) and the slot starts from a copy.
class GrammarConstraint {
public:
    GrammarConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const GrammarVocab> vocab);

    // Scans the vocabulary at the grammar's start now (the verdict is kept), so the first token costs the
    // inference thread no scan.
    void prepare() { allowed_all(); }
    bool allowed(int32_t id) const { return allowed_at(m_, id); }
    // Samples with `s` among the allowed tokens only. note: the sampler's chain runs first and its
    // candidates are filtered (cheap: greedy checks one token in the common case); only if none of them
    // is allowed are all disallowed logits set to -inf and the chain run again. Returns -1 if no token
    // at all is allowed (the grammar cannot be continued with this vocabulary).
    int32_t sample(Sampler& s, const float* logits);
    // The distribution sample() draws from (normalized, allowed tokens only; greedy: one entry), for
    // verifiers that need p itself (spec/verify's rejection sampling). False, `dist` empty, if no token
    // is allowed (as sample() returning -1).
    bool distribution(Sampler& s, const float* logits, std::vector<TokenProb>& dist);
    // Records the token drawn (or forced); false if the grammar rejects it.
    bool accept(int32_t id);
    bool can_end() const { return m_.can_end(); }

    // The matcher state, to follow hypothetical continuations without touching this constraint (spec/
    // cuts drafts with it) or to go back to an earlier point of the output (restore).
    const GrammarMatcher& state() const { return m_; }
    void restore(const GrammarMatcher& m) { m_ = m; }
    // allowed() at state `m` (a copy of state() moved along some tokens).
    bool allowed_at(const GrammarMatcher& m, int32_t id) const;
    // Moves `m` past token `id` if allowed_at(m, id), else returns false leaving `m` unchanged.
    bool advance(GrammarMatcher& m, int32_t id) const;
    // After sample() returned -1: the matcher budget ("step-work", "live-stack" or "scan-work") that
    // refused tokens in that step, or nullptr if the grammar itself allows no token of the vocabulary.
    const char* budget_hit() const { return budget_hit_; }
    // A message for budget_hit(): which budget stopped the output and how to simplify the grammar.
    std::string budget_message() const;

private:
    struct Verdict {
        std::vector<uint8_t> ok;       // (n_vocab) 1: allowed
        const char* budget = nullptr;  // a budget refused some token while it was computed
    };
    bool mask(const Sampler& s, const float* logits);
    const Verdict& allowed_all();
    const Verdict* known_verdict() const;

    GrammarMatcher m_;
    std::shared_ptr<const GrammarVocab> vocab_;
    std::vector<float> masked_;   // (n_vocab) the logits with disallowed tokens at -inf
    std::vector<int32_t> order_;  // (n_vocab) token ids, a growing prefix sorted by descending logit
    // Whole-vocabulary verdicts per matcher state. note: inside a JSON string or a `[a-z]*` run the state
    // is the same after every token, so the ~0.2 s scan of a state with many allowed tokens is paid once.
    std::map<std::vector<uint32_t>, Verdict> verdicts_;
    const char* budget_hit_ = nullptr;
};

}  // namespace bee
