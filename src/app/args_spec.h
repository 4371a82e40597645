// app/args_spec: the speculative-decoding option group (--spec-type, -md, --spec-draft-*, per-drafter
// knobs, -lcs/-lcd, --spec-dm-*), shared by `bee run`, `bee bench spec` and `bee serve`.
#pragma once
#include <string>

#include "app/args.h"
#include "spec/spec_params.h"

namespace bee {

struct SpecOptions {
    SpecParams params;
    // set by flags without a value; folded into params by finish_spec_options
    bool spec_default = false;
    bool no_adaptive = false;
    bool type_given = false;
    int32_t draft_threads = 0;   // -td (0: the target's -t)
    int32_t branch_budget = -1;  // --spec-branch-budget (-1: not given)
    int32_t tree_budget = 0;     // --tree-budget (legacy total)
};

void add_spec_options(ArgParser& p, SpecOptions& o);
// Call after parse(): resolves presets and checks combinations (e.g. -md without a draft type adds
// `draft`; `draft` without -md is an Error). n_ctx / n_threads: the target's, for the draft model.
void finish_spec_options(SpecOptions& o, int n_ctx, int n_threads);

}  // namespace bee
