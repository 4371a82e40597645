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

void add_device_options(ArgParser& p, OffloadParams& o, bool kv_flags) {
    if (!offload_built()) return;
    p.custom("-ngl,--gpu-layers,--n-gpu-layers", "N|all",
             "layers on the Vulkan device, counted from the last (>= the layer count or all: the output head "
             "too); their KV f16 (unless -nkvo); without a device every layer runs on the CPU [0]",
             [&o](const std::string& v) { o.n_gpu_layers = parse_gpu_layers(v); });
    p.str("-dev,--device", &o.device, "DEV",
          "Vulkan device for -ngl: an index or a name part of --list-devices, or none (the CPU only) [the first GPU]");
    p.custom("-ot,--override-tensor", "PATTERN=BUF,...",
             "tensors whose GGUF name the regex finds go to BUF: CPU or a device of --list-devices (Vulkan0); "
             "whole layers move: a layer with a tensor on CPU runs on the CPU, else one with a tensor on the "
             "device runs there, beyond -ngl too (the output head likewise); the first pattern that finds a "
             "tensor decides it; repeatable",
             [&o](const std::string& v) { parse_tensor_overrides(v, &o.overrides); });
    if (!kv_flags) return;
    p.action("-kvo,--kv-offload", "the K/V of offloaded layers in device memory [on]", [&o] { o.kv_offload = true; });
    p.action("-nkvo,--no-kv-offload",
             "the K/V of offloaded layers in host memory, their attention on the CPU (any -ctk/-ctv type)",
             [&o] { o.kv_offload = false; });
}

}  // namespace bee
