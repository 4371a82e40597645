// model/offload_none: Offload::create in a build without the Vulkan layer (BEE_VULKAN off).
#ifndef BEE_HAVE_VULKAN
#include "model/offload.h"

namespace bee {

bool offload_built() { return false; }

std::unique_ptr<Offload> Offload::create(const Model&, const KvCache&, int, const OffloadParams&, const OffloadPlan&,
                                         std::string* no_device) {
    *no_device = "this build has no GPU backend (Vulkan was not found at build time)";
    return nullptr;
}

}  // namespace bee
#endif
