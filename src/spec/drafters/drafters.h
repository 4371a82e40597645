// spec/drafters/drafters: the factory of each drafter (one file each), used only by spec/registry.cpp.
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

}  // namespace bee
