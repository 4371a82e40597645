// spec/spec_params: every speculative-decoding setting (drafter types, per-drafter knobs, draft model,
// depth policy). Defaults follow ../shared/specs/modelfree-and-server.md A.2 and drafters.md 2.9.
#pragma once
#include <string>
#include <vector>

namespace bee {

struct NgramSizes {
    int size_n = 12;   // key length N (the pattern that must match)
    int size_m = 48;   // value length M (the longest draft)
    int min_hits = 1;  // occurrences of a key before it drafts (map-k4v only)
};

// --spec-dm-*: the adaptive depth controllers (drafters.md 2.9).
struct DepthParams {
    bool adaptive = true;               // --spec-dm-adaptive / --no-spec-dm-adaptive (off: fixed depth)
    std::string controller = "profit";  // profit | fringe
    int probe_interval = 16;
    float probe_fraction = 0.25f;
    int explore_interval = 12;
    int off_dwell = 8;
    float fringe_min = 0.30f, fringe_max = 0.50f;
    int min_reach = 3;
    float profit_min = 0.05f;
    float raise_margin = 0.05f, lower_margin = 0.05f;
    float ewma_alpha = 0.15f;
    int min_samples = 3;
    int warmup = 0;  // 0: min_samples
    int baseline_interval = 1024;
    float prior_weight = 0.3f;  // how far one request moves the per-process prior (0: no prior)
};

struct SpecParams {
    std::vector<std::string> types;  // drafter names from the registry; empty: no speculation
    // No --spec-type was given: the runtime adds draft-mtp when the target has an MTP block (it knows the
    // model; drafters.md §8.3). Off unless the command line asks for the default.
    bool auto_mtp = false;

    // Draft length settings shared by copyspec, recycle, suffix and the draft model.
    int draft_n_max = 16;          // --spec-draft-n-max
    int draft_n_min = 0;           // --spec-draft-n-min: drafts shorter than this are dropped
    float draft_p_min = 0.0f;      // --spec-draft-p-min: the draft model stops below this top probability
    float draft_temp = 0.0f;       // --spec-draft-temp: 0 greedy drafting, > 0 sampled (exact rejection)
    bool draft_temp_auto = false;  // --spec-draft-temp auto: use the target's temperature
    int draft_top_k = 4;           // --spec-draft-top-k: candidates per depth for tree drafts (1 with no branches)
    int branch_budget = 0;         // --spec-branch-budget: tree nodes beyond the main path (0: chains)
    std::string draft_model;       // -md FILE (a draft model, an EAGLE-3 head or a DFlash drafter)
    int draft_n_ctx = 4096;        // the draft model's context (set to the target's)
    int draft_n_threads = 0;       // 0: all cores

    NgramSizes ngram_simple, ngram_map_k, ngram_map_k4v;
    int ngram_mod_n_match = 24, ngram_mod_n_min = 48, ngram_mod_n_max = 64;
    int ngram_mod_dead_off = 3;  // consecutive zero-accept drafts before ngram-mod pauses for the request
    std::string lookup_cache_static, lookup_cache_dynamic;  // -lcs / -lcd
    int copyspec_gamma = 6;
    int recycle_k = 8;  // successors kept per token
    int suffix_max_depth = 64;
    float suffix_factor = 2.0f, suffix_offset = 0.0f, suffix_min_prob = 0.1f;
    int suffix_tree_nodes = 0;   // --spec-suffix-tree: > 0 drafts a best-first tree of this many nodes
    int dflash_cross_ctx = 512;  // --spec-dflash-cross-ctx: context positions a DFlash block attends to
    int dflash_max_slots = 0;    // --spec-dflash-max-slots: server slots that draft with DFlash (0: all)

    DepthParams depth;

    bool enabled() const { return !types.empty(); }
};

}  // namespace bee
