// app/args_device: -ngl / --n-gpu-layers, -dev / --device, -ot / --override-tensor and -kvo / -nkvo, registered when the build has the Vulkan
// layer (model/offload.h offload_built()); without it the rows of app/args_compat report them.
#pragma once
#include "app/args.h"
#include "model/offload.h"

namespace bee {

// kv_flags: -kvo / -nkvo too (bee bench keeps llama-bench's -nkvo VALUES row in app/args_compat).
void add_device_options(ArgParser& p, OffloadParams& o, bool kv_flags = true);

}  // namespace bee
