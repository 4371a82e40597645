// spec/drafters/drafters: each drafter's factory (one file each) and its registry row, which the file
// defines after its code; spec/registry.cpp lists the rows in priority order.
#pragma once
#include <memory>

#include "spec/drafter.h"

namespace bee {

std::unique_ptr<Drafter> make_ngram_simple(const DrafterEnv& env);
std::unique_ptr<Drafter> make_ngram_map_k(const DrafterEnv& env);
std::unique_ptr<Drafter> make_ngram_map_k4v(const DrafterEnv& env);
std::unique_ptr<Drafter> make_ngram_mod(const DrafterEnv& env);
std::unique_ptr<DrafterShared> make_ngram_mod_shared(const SpecParams& params, const Model& target);
std::unique_ptr<Drafter> make_ngram_cache(const DrafterEnv& env);
std::unique_ptr<DrafterShared> make_ngram_cache_shared(const SpecParams& params, const Model& target);
std::unique_ptr<Drafter> make_copyspec(const DrafterEnv& env);
std::unique_ptr<Drafter> make_recycle(const DrafterEnv& env);
std::unique_ptr<DrafterShared> make_recycle_shared(const SpecParams& params, const Model& target);
std::unique_ptr<Drafter> make_suffix(const DrafterEnv& env);
std::unique_ptr<DrafterShared> make_suffix_shared(const SpecParams& params, const Model& target);
std::unique_ptr<Drafter> make_draft_model(const DrafterEnv& env);
std::unique_ptr<DrafterShared> make_draft_model_shared(const SpecParams& params, const Model& target);
std::unique_ptr<Drafter> make_draft_mtp(const DrafterEnv& env);
std::unique_ptr<DrafterShared> make_draft_mtp_shared(const SpecParams& params, const Model& target);
std::unique_ptr<Drafter> make_eagle3(const DrafterEnv& env);
std::unique_ptr<DrafterShared> make_eagle3_shared(const SpecParams& params, const Model& target);
std::unique_ptr<Drafter> make_dflash(const DrafterEnv& env);
std::unique_ptr<DrafterShared> make_dflash_shared(const SpecParams& params, const Model& target);

struct DrafterKind;
extern const DrafterKind kDrafterNgramSimple, kDrafterNgramMapK, kDrafterNgramMapK4v, kDrafterNgramMod,
    kDrafterNgramCache, kDrafterCopyspec, kDrafterRecycle, kDrafterSuffix, kDrafterMtp, kDrafterDraftModel,
    kDrafterEagle3, kDrafterDflash;

}  // namespace bee
