// spec/stats: per-drafter statistics in llama.cpp's format (modelfree-and-server.md A.1): call counts,
// generated / accepted drafts and tokens, durations, mean acceptance length, acceptance per position.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace bee {

struct DrafterStats {
    std::string name;                                // stats name, e.g. "ngram_simple"
    int64_t n_begin = 0, n_draft = 0, n_accept = 0;  // #calls(b,g,a)
    int64_t gen_drafts = 0, acc_drafts = 0;          // drafts proposed / with >= 1 token accepted
    int64_t gen_tokens = 0, acc_tokens = 0;
    double ms_begin = 0, ms_draft = 0, ms_accept = 0;
    std::vector<int64_t> acc_at_pos;  // [i]: drafts whose accepted length was > i

    void record_accept(int n_drafted, int n_accepted);
    void merge(const DrafterStats& o);
    // 1 + accepted tokens per accept call (the bonus token included).
    double mean_acc_len() const { return n_accept ? 1.0 + (double)acc_tokens / (double)n_accept : 0.0; }
    // "statistics ngram_simple: #calls(b,g,a) = ..., #acc rate/pos = 0.9 0.8 ..."
    std::string line() const;
};

// Totals of one generation (or of every slot of a server).
struct SpecStats {
    std::vector<DrafterStats> drafters;  // one per configured type, in priority order
    int64_t n_cycles = 0;                // target decodes while generating
    int64_t n_tokens = 0;                // tokens emitted by those decodes
    int64_t n_grammar_cut = 0;           // draft tokens a grammar rejected before verification
    int64_t draft_n() const;             // draft tokens proposed (llama-server timings.draft_n)
    int64_t draft_n_accepted() const;
    void merge(const SpecStats& o);
};

}  // namespace bee
