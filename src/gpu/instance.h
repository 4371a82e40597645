// gpu/instance: the Vulkan instance (no layers, no extensions) and what each physical device is.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bee::gpu {

// One physical device as `bee --list-devices` prints it.
struct DeviceInfo {
    int index = 0;             // position in vkEnumeratePhysicalDevices order
    std::string name;          // "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"
    std::string type;          // "discrete", "integrated", "virtual", "cpu", "other"
    uint64_t memory = 0;       // bytes in device-local heaps
    std::string driver;        // driver name and version info, e.g. "NVIDIA 580.65.06", "llvmpipe Mesa 22.3.6"
    uint32_t api_version = 0;  // VK_MAKE_API_VERSION of the device
    uint32_t subgroup_size = 0;
    bool subgroup_arithmetic = false;  // compute shaders may use subgroupAdd (Vulkan 1.1 device and instance)
    bool timestamps = false;           // compute queues can write timestamps
};

class Instance {
public:
    // Throws Error when there is no Vulkan loader or no driver (VK_ERROR_INCOMPATIBLE_DRIVER).
    Instance();
    ~Instance();
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    VkInstance handle() const { return instance_; }
    uint32_t api_version() const { return api_version_; }  // what the instance was created for
    const std::vector<VkPhysicalDevice>& physical_devices() const { return physical_; }
    DeviceInfo describe(int index) const;

private:
    VkInstance instance_ = VK_NULL_HANDLE;
    uint32_t api_version_ = VK_API_VERSION_1_0;
    std::vector<VkPhysicalDevice> physical_;
};

// Every device the loader reports; empty (with the reason in *why_none) when there is none or no driver.
std::vector<DeviceInfo> list_devices(std::string* why_none = nullptr);

// "1.3.230"
std::string api_version_string(uint32_t v);

// One line of `bee --list-devices` (llama.cpp's "  Vulkan0: NAME (...)" shape):
// "  Vulkan0: NVIDIA H200 (discrete, 143771 MiB, driver NVIDIA 580.65.06, Vulkan 1.4.312)".
std::string device_line(const DeviceInfo& d);

}  // namespace bee::gpu
