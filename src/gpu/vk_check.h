// gpu/vk_check: Vulkan result codes to bee::Error, with a readable name for each code.
#pragma once
#include <vulkan/vulkan.h>

namespace bee::gpu {

// "VK_ERROR_OUT_OF_DEVICE_MEMORY", ...
const char* vk_result_name(VkResult r);

// Throws Error "gpu: <what>: <code>" unless r is VK_SUCCESS.
void vk_check(VkResult r, const char* what);

}  // namespace bee::gpu
