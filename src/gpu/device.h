// gpu/device: one opened Vulkan device: its compute queue, command pool and pipeline cache.
#pragma once
#include <vulkan/vulkan.h>

#include <functional>
#include <memory>
#include <string>

#include "gpu/instance.h"

namespace bee::gpu {

class Device {
public:
    // selector: "" picks the first discrete GPU, else integrated, virtual, then CPU (llvmpipe); all digits:
    // that index of `list_devices()`; otherwise the first device whose name contains it (case-insensitive).
    // Throws Error when no device matches or none exists.
    explicit Device(const std::string& selector = "");
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const DeviceInfo& info() const { return info_; }
    VkDevice handle() const { return device_; }
    VkPhysicalDevice physical() const { return physical_; }
    VkQueue queue() const { return queue_; }
    VkCommandPool command_pool() const { return pool_; }
    VkPipelineCache pipeline_cache() const { return cache_; }
    const VkPhysicalDeviceLimits& limits() const { return limits_; }
    bool timestamps() const { return timestamp_bits_ > 0; }
    double timestamp_period_ns() const { return limits_.timestampPeriod; }

    // Index of a memory type allowed by type_bits with all of `need`; among them one with `prefer` if any.
    // Returns -1 when none has `need`.
    int find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags need, VkMemoryPropertyFlags prefer) const;

    // Whether device buffers are mapped where the memory allows it (unified memory: llvmpipe, integrated
    // GPUs). Tests turn it off to take the staging path a discrete GPU takes.
    bool map_device_memory() const { return map_device_memory_; }
    void set_map_device_memory(bool on) { map_device_memory_ = on; }

    // Records a one-off command buffer with `record`, submits it and waits (uploads, downloads).
    void run_once(const std::function<void(VkCommandBuffer)>& record);

private:
    std::unique_ptr<Instance> instance_;
    DeviceInfo info_;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkPhysicalDeviceLimits limits_{};
    VkPhysicalDeviceMemoryProperties memory_{};
    VkDevice device_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    uint32_t timestamp_bits_ = 0;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    VkFence once_fence_ = VK_NULL_HANDLE;
    bool map_device_memory_ = true;
};

}  // namespace bee::gpu
