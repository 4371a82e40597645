// app/cmd_devices: `bee devices` / `bee --list-devices`: the Vulkan devices, one line each (index, name, type,
// device-local memory, driver, API version), as llama.cpp's --list-devices prints them.
#include <cstdio>
#include <cstring>
#include <string>

#include "app/commands.h"

#ifdef BEE_HAVE_VULKAN
#include "gpu/instance.h"
#endif

namespace bee {

int cmd_devices(int argc, char** argv) {
    if (argc > 0 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
        printf(
            "usage: bee devices   (or bee --list-devices)\n\nLists the Vulkan devices. Model offload (-ngl) is "
            "not wired to them yet.\n");
        return 0;
    }
    if (argc > 0) {
        fprintf(stderr, "error: bee devices takes no arguments\n");
        return 2;
    }
#ifdef BEE_HAVE_VULKAN
    std::string why;
    const std::vector<gpu::DeviceInfo> devices = gpu::list_devices(&why);
    printf("Available devices:\n");
    for (const gpu::DeviceInfo& d : devices) printf("%s\n", gpu::device_line(d).c_str());
    if (devices.empty()) fprintf(stderr, "no Vulkan device: %s\n", why.c_str());
    return 0;
#else
    fprintf(stderr,
            "bee was built without the Vulkan layer (install libvulkan-dev and glslc, e.g. `make setup`, "
            "and configure again)\n");
    return 1;
#endif
}

}  // namespace bee
