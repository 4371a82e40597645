// kv/kv_layers: per-layer V types (boundary-V promotion).
#include "kv/kv_layers.h"

#include <algorithm>
#include <cstdlib>

#include "base/error.h"
#include "kv/kv_cache.h"
#include "quant/turbo.h"

namespace bee {

int kv_boundary_from_name(const std::string& v, const char* flag) {
    if (v == "auto") return kKvBoundaryAuto;
    char* end = nullptr;
    const long n = strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 0 || n > 1024)
        fail("invalid value '%s' for %s: expected auto or a layer count 0..1024 (0: no promotion)", v.c_str(), flag);
    return (int)n;
}

// auto: q8_0 V on the first 2 and last 2 layers of every model with a TurboQuant V type (the spec's
// "Boundary V", §6), measured in docs/PERFORMANCE-LOG.md (2026-11-22). V rounding costs the most on the first
// layers: turbo3 V on one layer at a time (K and the other layers f16) gives a mean KLD of 0.032 / 0.039 /
// 0.027 on Gemma 3 270M's layers 0-2, falling to 0.007 / 0.002 on layers 16-17 (SmolLM2: layer 1 0.015,
// the others 0.002-0.009). Promoting layers 0, 1, 16, 17 takes Gemma's turbo3 from +12.4% to +6.6%
// perplexity (8 chunks) for 10% more KV bytes; layers 0-1 alone give +7.6%, layers 0-3 (the same bytes)
// +6.0%, the same within the noise, so the spec's symmetric rule is kept. The cost is 4 layers' V,
// small on deep models; below 16 layers that would be a quarter of the cache or more, so auto leaves
// such models alone (a count still applies).
constexpr int kAutoBoundary = 2, kAutoMinLayers = 16;

std::vector<GgmlType> kv_v_layer_types(GgmlType type_v, int n_layer, int boundary, std::string* why) {
    if (!is_turbo_type(type_v) || boundary == 0) return {};
    if (boundary == kKvBoundaryAuto && n_layer < kAutoMinLayers) return {};
    std::vector<GgmlType> t(n_layer, type_v);
    const int n = std::min(boundary == kKvBoundaryAuto ? kAutoBoundary : boundary, (n_layer + 1) / 2);
    for (int il = 0; il < n; il++) t[il] = t[n_layer - 1 - il] = GgmlType::Q8_0;
    *why = boundary == kKvBoundaryAuto
               ? strfmt(
                     "the first and last %d layers (--kv-boundary-layers auto: %d for every turbo V type on models of "
                     "%d layers or more; 0 turns it off)",
                     n, kAutoBoundary, kAutoMinLayers)
               : strfmt("the first and last %d layers (--kv-boundary-layers %d)", n, boundary);
    return t;
}

}  // namespace bee
