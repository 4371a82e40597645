// spec/registry: the one table from drafter name to factory (in the fixed priority order used when
// several types are combined), `--spec-type` list parsing, and SpecShared — the per-process state of
// every configured drafter kind.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "spec/depth_policy.h"
#include "spec/drafter.h"

namespace bee {

// One flag of a drafter kind, declared in its row; the command line (app/args_spec) adds every row's
// flags, so a drafter's flags and help text are written once, next to its code.
struct DrafterFlag {
    const char* names;                             // "--spec-suffix-tree" (aliases after commas)
    const char* meta;                              // value placeholder: "N", "FILE"
    const char* help;                              // with the default in brackets
    int32_t* (*i32)(SpecParams& p) = nullptr;      // an integer setting (range lo..hi), or
    std::string* (*str)(SpecParams& p) = nullptr;  // a string setting (a file name)
    int32_t lo = 0, hi = 0;
};

// A drafter kind: its row is defined in its own file (spec/drafters/), and registry.cpp lists the rows
// in priority order. Adding a drafter = its file with its row + one line in that list.
struct DrafterKind {
    const char* name;                // CLI name (--spec-type)
    const char* aliases;             // other accepted names, comma-separated ("" none): llama.cpp's spellings
    const char* stats_name;          // name in the statistics lines (llama.cpp's internal name)
    std::vector<DrafterFlag> flags;  // its own settings (the shared --spec-draft-* ones are in app/args_spec)
    // A file this kind loads and cannot run without: the flag that names it and whether it was given
    // (nullptr: none). Checked at start-up.
    const char* file_flag;
    bool (*has_file)(const SpecParams& p);
    bool reads_hidden;  // reads the target's hidden states (Drafter::capture_layers)
    std::unique_ptr<Drafter> (*make)(const DrafterEnv& env);
    // Process-wide state, created once at start-up (nullptr: none).
    std::unique_ptr<DrafterShared> (*make_shared)(const SpecParams& params, const Model& target);
    // Kinds that load -md FILE: the general.architecture(s) that file has ("eagle3"; several
    // comma-separated), or "" for a model of any other architecture (the draft model); -md without
    // --spec-type picks the kind by the file's architecture. nullptr: the kind does not read -md.
    const char* file_arch = nullptr;
    // Server slots that may use this kind (slot ids 0 .. N-1; N <= 0: every slot). nullptr: every slot.
    int32_t (*max_slots)(const SpecParams& p) = nullptr;
};

// Every drafter kind, highest priority first.
const std::vector<DrafterKind>& drafter_kinds();
// "ngram-simple, ngram-map-k, ...": for help texts and errors.
std::string drafter_kind_names();
const DrafterKind* find_drafter_kind(const std::string& name);  // by name or alias; nullptr if unknown

// "ngram-mod,suffix" -> the names in priority order. "none" anywhere (or "") gives an empty list.
// Throws Error naming an unknown type and listing the known ones.
std::vector<std::string> parse_spec_types(const std::string& list);

// The kind -md FILE means without --spec-type: the one whose file_arch is the file's architecture, else
// the draft model. Throws Error if the file cannot be read.
const DrafterKind& drafter_kind_for_file(const std::string& path);
// Refuses a file given for a kind it does not fit (an EAGLE-3 head as a draft model and the reverse),
// saying which --spec-type the file is for.
void check_drafter_file(const DrafterKind& kind, const std::string& path);

// The kinds of `types` server slot `slot` may use (each kind's max_slots), in the same order.
std::vector<std::string> spec_types_for_slot(const SpecParams& params, const std::vector<std::string>& types, int slot);

// Shared state of every kind in params.types; loads draft models and lookup caches, so bad files are
// reported at start-up. One per process (the server shares it between slots).
class SpecShared {
public:
    // pool: the target engine's threads, lent to drafters that compute between decodes (nullptr: the
    // first such drafter gets a pool of its own).
    SpecShared(const SpecParams& params, const Model& target, ThreadPool* pool = nullptr);
    ~SpecShared();
    ThreadPool& pool();
    const SpecParams& params() const { return params_; }
    const Model& target() const { return target_; }
    DrafterShared* get(const std::string& name) const;
    // Drafts, kind by kind, every sequence whose drafter queued its request (Speculator::plan).
    void draft_queued();
    // The verify cost curve every sequence's profit controller shares (depth_policy.h).
    const std::shared_ptr<VerifyCostModel>& verify_cost() const { return verify_cost_; }
    // What the depth policies of earlier requests with these drafter types learnt (depth_prior.h): one
    // prior per type set, since acceptance is a property of the drafters. The reference stays valid.
    DepthPrior& depth_prior(const std::vector<std::string>& types);

private:
    SpecParams params_;
    const Model& target_;
    std::map<std::string, std::unique_ptr<DrafterShared>> shared_;
    std::shared_ptr<VerifyCostModel> verify_cost_ = std::make_shared<VerifyCostModel>();
    std::map<std::string, DepthPrior> priors_;
    ThreadPool* pool_;
    std::unique_ptr<ThreadPool> own_pool_;  // key: the type names joined with ','
};

}  // namespace bee
