// spec/stats: counters and the llama.cpp-style statistics line.
#include "spec/stats.h"

#include "base/error.h"

namespace bee {

void DrafterStats::record_accept(int n_drafted, int n_accepted) {
    n_accept++;
    gen_drafts++;
    gen_tokens += n_drafted;
    acc_tokens += n_accepted;
    if (n_accepted > 0) acc_drafts++;
    if ((int)acc_at_pos.size() < n_drafted) acc_at_pos.resize(n_drafted, 0);
    for (int i = 0; i < n_accepted; i++) acc_at_pos[i]++;
}

void DrafterStats::merge(const DrafterStats& o) {
    n_begin += o.n_begin;
    n_draft += o.n_draft;
    n_accept += o.n_accept;
    gen_drafts += o.gen_drafts;
    acc_drafts += o.acc_drafts;
    gen_tokens += o.gen_tokens;
    acc_tokens += o.acc_tokens;
    ms_begin += o.ms_begin;
    ms_draft += o.ms_draft;
    ms_accept += o.ms_accept;
    if (acc_at_pos.size() < o.acc_at_pos.size()) acc_at_pos.resize(o.acc_at_pos.size(), 0);
    for (size_t i = 0; i < o.acc_at_pos.size(); i++) acc_at_pos[i] += o.acc_at_pos[i];
}

std::string DrafterStats::line() const {
    std::string s = strfmt(
        "statistics %s: #calls(b,g,a) = %lld %lld %lld, #gen drafts = %lld, #acc drafts = %lld, "
        "#gen tokens = %lld, #acc tokens = %lld, dur(b,g,a) = %.3f, %.3f, %.3f ms, "
        "#mean acc len = %.2f, #acc rate/pos =",
        name.c_str(), (long long)n_begin, (long long)n_draft, (long long)n_accept, (long long)gen_drafts,
        (long long)acc_drafts, (long long)gen_tokens, (long long)acc_tokens, ms_begin, ms_draft, ms_accept,
        mean_acc_len());
    const size_t shown = acc_at_pos.size() < 16 ? acc_at_pos.size() : 16;
    for (size_t i = 0; i < shown; i++) s += strfmt(" %.2f", n_accept ? (double)acc_at_pos[i] / (double)n_accept : 0.0);
    if (shown == 0) s += " -";
    return s;
}

int64_t SpecStats::draft_n() const {
    int64_t n = 0;
    for (const DrafterStats& d : drafters) n += d.gen_tokens;
    return n;
}

int64_t SpecStats::draft_n_accepted() const {
    int64_t n = 0;
    for (const DrafterStats& d : drafters) n += d.acc_tokens;
    return n;
}

void SpecStats::merge(const SpecStats& o) {
    for (const DrafterStats& od : o.drafters) {
        bool found = false;
        for (DrafterStats& d : drafters)
            if (d.name == od.name) {
                d.merge(od);
                found = true;
            }
        if (!found) drafters.push_back(od);
    }
    n_cycles += o.n_cycles;
    n_tokens += o.n_tokens;
    n_grammar_cut += o.n_grammar_cut;
}

}  // namespace bee
