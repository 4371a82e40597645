// tests/unit/spec/spec_loop: a minimal single-sequence loop over the Speculator contract (speculator.h) —
// prefill, then draft / decode / verify / commit cycles — so the spec layer's tests run without the
// runtime above it. Every front end (`bee run`, `bee chat`, `bee bench spec`, `bee serve`) uses the
// runtime's scheduler instead (runtime/local_run.h).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/engine.h"
#include "sample/grammar.h"
#include "sample/sampler.h"
#include "spec/speculator.h"

namespace bee {

struct GenerateOptions {
    int n_predict = -1;  // tokens to generate; -1: until end of generation or the context is full
    int n_batch = 2048;  // prompt chunk
    bool ignore_eos = false;  // end-of-generation tokens are generated like any other (fixed-length runs)
    // Constrained generation: every token is sampled under this grammar (drafts are cut by it and
    // verified under it); the output ends where no token fits. Null: unconstrained.
    GrammarConstraint* grammar = nullptr;
    // Called with each draft as it goes to the verify batch (after the Speculator's cuts).
    std::function<void(const DraftTree&)> on_draft;
};

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated tokens (an end-of-generation token is not included)
    double prompt_ms = 0, predicted_ms = 0;
    int n_decodes = 0;  // target decodes while generating
};

// `spec` may be null (plain decoding). The prompt's tokens are accept()ed into the sampler first.
// on_token is called for every generated token in order. Uses sequence 0 of a cache the caller cleared.
GenerateResult generate_tokens(Engine& eng, Sampler& sampler, Speculator* spec, const std::vector<int32_t>& prompt,
                               const GenerateOptions& opt, const std::function<void(int32_t)>& on_token = {});

}  // namespace bee
