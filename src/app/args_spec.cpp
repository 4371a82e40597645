// app/args_spec: speculative-decoding flags with llama.cpp's names (modelfree-and-server.md A.2,
// drafters.md 2.9) and their checks.
#include "app/args_spec.h"

#include <algorithm>

#include "app/args_compat.h"
#include "base/error.h"
#include "base/log.h"
#include "spec/registry.h"

namespace bee {

namespace {

void add_depth_options(ArgParser& p, SpecOptions& o) {
    DepthParams& d = o.params.depth;
    p.flag("--spec-dm-adaptive", &d.adaptive, "adaptive draft depth per sequence (default on)");
    p.flag("--no-spec-dm-adaptive", &o.no_adaptive, "fixed draft depth: always the drafters' maximum");
    p.str("--spec-dm-controller", &d.controller, "NAME", "adaptive depth controller: profit, fringe [profit]");
    p.i32("--spec-dm-probe-interval", &d.probe_interval, "cycles between probes while off [16]", 1, 1 << 20);
    p.f32("--spec-dm-probe-fraction", &d.probe_fraction, "probe depth as a fraction of the maximum [0.25]", 0, 1);
    p.i32("--spec-dm-explore-interval", &d.explore_interval, "cycles between explorations of a deeper rung [12]", 0,
          1 << 20);
    p.i32("--spec-dm-off-dwell", &d.off_dwell, "losing cycles in a row before turning drafting off [8]", 1, 1 << 20);
    p.f32("--spec-dm-fringe-min", &d.fringe_min, "fringe controller: turn off below this acceptance [0.30]", 0, 1);
    p.f32("--spec-dm-fringe-max", &d.fringe_max, "fringe controller: full depth above this acceptance [0.50]", 0, 1);
    p.i32("--spec-dm-min-reach", &d.min_reach, "fringe controller: samples needed at a position [3]", 1, 1 << 20);
    p.f32("--spec-dm-profit-min", &d.profit_min, "profit controller: required gain over no speculation [0.05]", 0, 10);
    p.f32("--spec-dm-profit-raise-margin", &d.raise_margin, "profit controller: hysteresis going deeper [0.05]", 0, 10);
    p.f32("--spec-dm-profit-lower-margin", &d.lower_margin, "profit controller: hysteresis going shallower [0.05]", 0,
          10);
    p.f32("--spec-dm-profit-ewma-alpha", &d.ewma_alpha, "profit controller: EWMA factor [0.15]", 0.01f, 1);
    p.i32("--spec-dm-profit-min-samples", &d.min_samples, "profit controller: samples before a depth counts [3]", 1,
          1 << 20);
    p.i32("--spec-dm-profit-warmup", &d.warmup, "profit controller: full-depth cycles first (0: min-samples) [0]", 0,
          1 << 20);
    p.i32("--spec-dm-profit-baseline-interval", &d.baseline_interval,
          "profit controller: active cycles between no-speculation re-probes [1024]", 0, 1 << 30);
    p.f32("--spec-dm-prior-weight", &d.prior_weight,
          "profit controller: how far one request moves the per-process "
          "prior that each new request starts from (0: none, every request learns from scratch) [0.3]",
          0, 1);
}

}  // namespace

void add_spec_options(ArgParser& p, SpecOptions& o) {
    SpecParams& s = o.params;
    const std::string types_help = "speculative decoding: none or a comma list of " + drafter_kind_names() + " [none]";
    p.custom("--spec-type", "LIST", types_help.c_str(), [&o](const std::string& v) {
        o.params.types = parse_spec_types(v);
        o.type_given = true;
    });
    p.flag("--spec-default", &o.spec_default, "preset: --spec-type ngram-mod with n-match 24, n-min 48, n-max 64");
    p.i32("--spec-draft-n-max,--draft,--draft-n,--draft-max", &s.draft_n_max,
          "most draft tokens per step (draft model, copyspec, recycle, suffix) [16]", 1, 1024);
    p.i32("--spec-draft-n-min,--draft-min,--draft-n-min", &s.draft_n_min, "drop drafts shorter than this [0]", 0, 1024);
    p.f32("--spec-draft-p-min,--draft-p-min", &s.draft_p_min,
          "draft model: stop when its top probability is below this [0.0]", 0, 1);
    p.i32("--spec-draft-top-k", &s.draft_top_k,
          "tree drafts: candidates per depth (forced to 1 without --spec-branch-budget) [4]", 1, 64);
    p.i32("--spec-branch-budget", &o.branch_budget,
          "tree drafts: nodes beyond the main path, for drafters that build trees (draft-eagle3, dflash) [0: chains]",
          0, 1024);
    p.i32("--tree-budget", &o.tree_budget,
          "legacy total tree size: --spec-branch-budget = max(0, N - --spec-draft-n-max) [0]", 0, 4096);
    p.custom("--spec-draft-temp", "0|T|auto",
             "draft model temperature: 0 greedy, T > 0 sampled (exact rejection "
             "sampling), auto = the target's [0]",
             [&s](const std::string& v) {
                 if (v == "auto") {
                     s.draft_temp_auto = true;
                     return;
                 }
                 char* end = nullptr;
                 const float t = strtof(v.c_str(), &end);
                 if (v.empty() || *end || !(t >= 0) || t > 100)
                     fail("invalid value '%s' for --spec-draft-temp: expected 0, a temperature up to 100, or auto",
                          v.c_str());
                 s.draft_temp = t;
                 s.draft_temp_auto = false;
             });
    for (const DrafterKind& k : drafter_kinds())  // each drafter's own settings, declared in its registry row
        for (const DrafterFlag& f : k.flags) {
            if (f.i32) p.i32(f.names, f.i32(s), f.help, f.lo, f.hi);
            else p.str(f.names, f.str(s), f.meta, f.help);
        }
    for (const char* removed :
         {"--spec-ngram-size-n", "--spec-ngram-size-m", "--spec-ngram-min-hits", "--spec-ngram-check-rate"}) {
        p.custom(removed, "N", "removed: use the per-drafter flags", [removed](const std::string&) {
            fail(
                "the argument %s has been removed: use the per-drafter flags (e.g. --spec-ngram-simple-size-n, "
                "--spec-ngram-map-k-size-n, --spec-ngram-mod-n-match)",
                removed);
        });
    }
    p.i32("-td,--threads-draft,--spec-draft-threads", &o.draft_threads, "draft model threads (0: -t) [0]", 0, 4096);
    add_depth_options(p, o);
    add_compat_options(p, kCompatSpec);
}

void finish_spec_options(SpecOptions& o, int n_ctx, int n_threads) {
    SpecParams& s = o.params;
    if (o.spec_default && !o.type_given) s.types = {"ngram-mod"};
    s.auto_mtp = !o.type_given;
    if (o.no_adaptive) s.depth.adaptive = false;
    if (!o.type_given)  // as llama.cpp's plain -md: a kind whose file is given is used without --spec-type
        for (const DrafterKind& k : drafter_kinds()) {
            if (!k.file_flag || !k.has_file(s)) continue;
            // -md FILE: the draft model, an EAGLE-3 head or a DFlash drafter, by the file's architecture
            const char* name = k.file_arch ? drafter_kind_for_file(s.draft_model).name : k.name;
            if (std::find(s.types.begin(), s.types.end(), name) == s.types.end()) s.types.push_back(name);
        }
    for (const std::string& t : s.types) {  // kinds that load a file cannot start without it
        const DrafterKind* k = find_drafter_kind(t);
        if (k && k->file_flag && !k->has_file(s))
            fail("--spec-type %s needs its file: give it with %s", t.c_str(), k->file_flag);
    }
    if (s.depth.controller != "profit" && s.depth.controller != "fringe")
        fail("invalid value '%s' for --spec-dm-controller: use profit or fringe", s.depth.controller.c_str());
    if (s.depth.fringe_min > s.depth.fringe_max)
        fail("--spec-dm-fringe-min (%g) must not exceed --spec-dm-fringe-max (%g)", s.depth.fringe_min,
             s.depth.fringe_max);
    if (s.draft_n_min > s.draft_n_max)
        fail("--spec-draft-n-min (%d) must not exceed --spec-draft-n-max (%d)", s.draft_n_min, s.draft_n_max);
    if (s.ngram_mod_n_min > s.ngram_mod_n_max)
        fail("--spec-ngram-mod-n-min (%d) must not exceed --spec-ngram-mod-n-max (%d)", s.ngram_mod_n_min,
             s.ngram_mod_n_max);
    s.branch_budget = o.branch_budget;
    if (o.tree_budget > 0 && o.branch_budget < 0) s.branch_budget = std::max(0, o.tree_budget - s.draft_n_max);
    if (o.tree_budget > 0 && o.branch_budget >= 0)
        BEE_LOG_WARN("--tree-budget %d is ignored: --spec-branch-budget %d is given", o.tree_budget, o.branch_budget);
    if (s.branch_budget <= 0) {
        s.branch_budget = 0;
        s.draft_top_k = 1;  // chains
    }
    s.draft_n_ctx = n_ctx;
    s.draft_n_threads = o.draft_threads > 0 ? o.draft_threads : n_threads;
}

}  // namespace bee
