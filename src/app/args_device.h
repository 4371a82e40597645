// app/args_device: -ngl / --n-gpu-layers and -dev / --device, registered when the build has the Vulkan
// layer (model/offload.h offload_built()); without it the rows of app/args_compat report them.
#pragma once
#include "app/args.h"
#include "model/offload.h"

namespace bee {

void add_device_options(ArgParser& p, OffloadParams& o);

}  // namespace bee
