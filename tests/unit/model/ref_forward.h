// tests/unit/model/ref_forward: a plain float64 forward pass of the tiny models, independent of src/ kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "tiny_model.h"

namespace bee::test {

// Logits (n, n_vocab) of a sequence whose tokens sit at ascending positions `pos`; row i attends to
// rows j <= i (and, on sliding-window layers, only to rows with pos[i] - pos[j] < n_swa).
std::vector<double> reference_logits(const TinyConfig& cfg, const TinyWeights& w, const std::vector<int32_t>& tokens,
                                     const std::vector<int32_t>& pos);

}  // namespace bee::test
