// kv/kv_layers: the V type of each layer. A low-bit V type (-ctv turbo*) can be kept at q8_0 on the
// layers whose V rounding costs the most (specs/kv-turboquant.md §6 "Model-level rules": boundary V),
// chosen by --kv-boundary-layers.
#pragma once
#include <string>
#include <vector>

#include "gguf/ggml_type.h"

namespace bee {

constexpr int kKvBoundaryAuto = -1;  // --kv-boundary-layers auto

// Parses --kv-boundary-layers: "auto" (kKvBoundaryAuto) or a count 0..1024; throws Error otherwise.
int kv_boundary_from_name(const std::string& v, const char* flag);

// Per-layer V types for a cache of n_layer layers with V type type_v and the boundary setting
// `boundary` (a count N: the first N and last N layers get q8_0 V, all of them when 2N >= n_layer;
// kKvBoundaryAuto: N = 2 on models of 16 layers or more, else none; the evidence is in kv_layers.cpp).
// Returns an empty vector when every layer keeps type_v (nothing to promote, or type_v is not a
// TurboQuant type); otherwise n_layer types, and *why says which layers were promoted and the rule.
std::vector<GgmlType> kv_v_layer_types(GgmlType type_v, int n_layer, int boundary, std::string* why);

}  // namespace bee
