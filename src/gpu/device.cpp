// gpu/device: device selection, logical device with one compute queue, command pool, pipeline cache.
#include "gpu/device.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

#include "base/error.h"
#include "gpu/vk_check.h"

namespace bee::gpu {

namespace {

int type_rank(const std::string& type) {
    if (type == "discrete") return 0;
    if (type == "integrated") return 1;
    if (type == "virtual") return 2;
    if (type == "cpu") return 3;
    return 4;
}

std::string lower(std::string s) {
    for (char& c : s) c = (char)tolower((unsigned char)c);
    return s;
}

int pick_device(const Instance& inst, const std::string& selector) {
    const int n = (int)inst.physical_devices().size();
    if (n == 0) fail("gpu: no Vulkan device found (the loader and driver work but report no physical device)");
    const bool digits = std::all_of(selector.begin(), selector.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!selector.empty() && digits) {
        const int i = atoi(selector.c_str());
        if (i >= n) fail("gpu: device %d asked for, but there are %d (bee --list-devices)", i, n);
        return i;
    }
    int best = -1, best_rank = 99;
    for (int i = 0; i < n; ++i) {
        const DeviceInfo d = inst.describe(i);
        if (!selector.empty()) {
            if (lower(d.name).find(lower(selector)) != std::string::npos) return i;
            continue;
        }
        if (type_rank(d.type) < best_rank) best = i, best_rank = type_rank(d.type);
    }
    if (best < 0) fail("gpu: no Vulkan device matches '%s' (bee --list-devices)", selector.c_str());
    return best;
}

// A compute queue family: one without graphics if it can write timestamps, else any compute family.
uint32_t pick_queue_family(VkPhysicalDevice pd, uint32_t* timestamp_bits) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
    std::vector<VkQueueFamilyProperties> q(n);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q.data());
    int any = -1, dedicated = -1;
    for (uint32_t i = 0; i < n; ++i) {
        if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (any < 0) any = (int)i;
        if (dedicated < 0 && !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) && q[i].timestampValidBits > 0)
            dedicated = (int)i;
    }
    if (any < 0) fail("gpu: the device has no compute queue");
    const uint32_t f = (uint32_t)(dedicated >= 0 ? dedicated : any);
    *timestamp_bits = q[f].timestampValidBits;
    return f;
}

}  // namespace

Device::Device(const std::string& selector) : instance_(std::make_unique<Instance>()) {
    const int index = pick_device(*instance_, selector);
    info_ = instance_->describe(index);
    physical_ = instance_->physical_devices()[(size_t)index];
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical_, &props);
    limits_ = props.limits;
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    queue_family_ = pick_queue_family(physical_, &timestamp_bits_);

    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{};
    qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qci.queueFamilyIndex = queue_family_;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{};
    dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    vk_check(vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

    VkCommandPoolCreateInfo pci{};
    pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = queue_family_;
    vk_check(vkCreateCommandPool(device_, &pci, nullptr, &pool_), "vkCreateCommandPool");

    VkPipelineCacheCreateInfo cci{};
    cci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    vk_check(vkCreatePipelineCache(device_, &cci, nullptr, &cache_), "vkCreatePipelineCache");

    VkFenceCreateInfo fci{};
    fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    vk_check(vkCreateFence(device_, &fci, nullptr, &once_fence_), "vkCreateFence");
}

Device::~Device() {
    if (!device_) return;
    vkDeviceWaitIdle(device_);
    vkDestroyFence(device_, once_fence_, nullptr);
    vkDestroyPipelineCache(device_, cache_, nullptr);
    vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
}

int Device::find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags need, VkMemoryPropertyFlags prefer) const {
    int fallback = -1;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
        if (!(type_bits & (1u << i))) continue;
        const VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
        if ((f & need) != need) continue;
        if ((f & prefer) == prefer) return (int)i;
        if (fallback < 0) fallback = (int)i;
    }
    return fallback;
}

void Device::run_once(const std::function<void(VkCommandBuffer)>& record) {
    VkCommandBufferAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb;
    vk_check(vkAllocateCommandBuffers(device_, &ai, &cb), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkResult r = vkBeginCommandBuffer(cb, &bi);
    if (r == VK_SUCCESS) {
        record(cb);
        r = vkEndCommandBuffer(cb);
    }
    if (r == VK_SUCCESS) {
        VkSubmitInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb;
        r = vkQueueSubmit(queue_, 1, &si, once_fence_);
        if (r == VK_SUCCESS) r = vkWaitForFences(device_, 1, &once_fence_, VK_TRUE, UINT64_MAX);
        vkResetFences(device_, 1, &once_fence_);
    }
    vkFreeCommandBuffers(device_, pool_, 1, &cb);
    vk_check(r, "one-off command buffer");
}

}  // namespace bee::gpu
