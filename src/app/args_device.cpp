// app/args_device: the device flags of every command that loads a model (run, chat, serve, bench, ...).
#include "app/args_device.h"

#include <climits>
#include <cstdlib>

#include "base/error.h"

namespace bee {

// "N" (>= 0) or "all" / "auto": every layer and the output head.
static int parse_gpu_layers(const std::string& v) {
    if (v == "all" || v == "auto") return INT_MAX;
    char* end = nullptr;
    const long n = strtol(v.c_str(), &end, 10);
    if (v.empty() || *end || n < 0) fail("-ngl '%s': expected a number of layers >= 0, or all", v.c_str());
    return n > INT_MAX ? INT_MAX : (int)n;
}

void add_device_options(ArgParser& p, OffloadParams& o) {
    if (!offload_built()) return;
    p.custom("-ngl,--gpu-layers,--n-gpu-layers", "N|all",
             "layers on the Vulkan device, counted from the last (>= the layer count or all: the output head "
             "too); f16 KV only; without a device every layer runs on the CPU [0]",
             [&o](const std::string& v) { o.n_gpu_layers = parse_gpu_layers(v); });
    p.str("-dev,--device", &o.device, "DEV",
          "Vulkan device for -ngl: an index or a name part of --list-devices, or none (the CPU only) [the first GPU]");
}

}  // namespace bee
