// gpu/instance: Vulkan instance creation and physical device descriptions.
#include "gpu/instance.h"

#include "base/error.h"
#include "gpu/vk_check.h"

namespace bee::gpu {

namespace {

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
        default: return "other";
    }
}

// Driver name and info from VkPhysicalDeviceDriverProperties (Vulkan 1.2), else the raw driver version.
std::string driver_string(VkPhysicalDevice pd, const VkPhysicalDeviceProperties& props, uint32_t instance_api) {
    if (props.apiVersion >= VK_API_VERSION_1_2 && instance_api >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceDriverProperties drv{};
        drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
        VkPhysicalDeviceProperties2 p2{};
        p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        p2.pNext = &drv;
        vkGetPhysicalDeviceProperties2(pd, &p2);
        return std::string(drv.driverName) + " " + drv.driverInfo;
    }
    return strfmt("driver version 0x%x", props.driverVersion);
}

// Subgroup size and whether compute shaders have subgroup arithmetic (0 / false before Vulkan 1.1).
void subgroup_properties(VkPhysicalDevice pd, uint32_t device_api, uint32_t instance_api, DeviceInfo* d) {
    if (device_api < VK_API_VERSION_1_1 || instance_api < VK_API_VERSION_1_1) return;
    VkPhysicalDeviceSubgroupProperties sg{};
    sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceProperties2 p2{};
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &sg;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    d->subgroup_size = sg.subgroupSize;
    d->subgroup_arithmetic = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
}

}  // namespace

Instance::Instance() {
    // note: ask for the newest API the loader has (capped at 1.3) so 1.2 queries (driver properties) work.
    uint32_t loader_api = VK_API_VERSION_1_0;
    auto enumerate_version =
        (PFN_vkEnumerateInstanceVersion)vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion");
    if (enumerate_version) enumerate_version(&loader_api);
    api_version_ = loader_api < VK_API_VERSION_1_3 ? loader_api : VK_API_VERSION_1_3;

    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "bee";
    app.pEngineName = "bee";
    app.apiVersion = api_version_;
    VkInstanceCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ci.pApplicationInfo = &app;
    const VkResult r = vkCreateInstance(&ci, nullptr, &instance_);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        fail(
            "gpu: no Vulkan driver found (install the GPU vendor's Vulkan driver, or mesa-vulkan-drivers for "
            "the CPU; VK_DRIVER_FILES can point at an ICD json)");
    vk_check(r, "vkCreateInstance");

    uint32_t n = 0;
    vk_check(vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
    physical_.resize(n);
    vk_check(vkEnumeratePhysicalDevices(instance_, &n, physical_.data()), "vkEnumeratePhysicalDevices");
    physical_.resize(n);
}

Instance::~Instance() {
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

DeviceInfo Instance::describe(int index) const {
    VkPhysicalDevice pd = physical_.at((size_t)index);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);

    DeviceInfo d;
    d.index = index;
    d.name = props.deviceName;
    d.type = type_name(props.deviceType);
    for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
        if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d.memory += mem.memoryHeaps[h].size;
    d.driver = driver_string(pd, props, api_version_);
    d.api_version = props.apiVersion;
    subgroup_properties(pd, props.apiVersion, api_version_, &d);

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> q(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q.data());
    for (const VkQueueFamilyProperties& f : q)
        if ((f.queueFlags & VK_QUEUE_COMPUTE_BIT) && f.timestampValidBits > 0) d.timestamps = true;
    return d;
}

std::vector<DeviceInfo> list_devices(std::string* why_none) {
    std::vector<DeviceInfo> out;
    try {
        Instance inst;
        for (size_t i = 0; i < inst.physical_devices().size(); ++i) out.push_back(inst.describe((int)i));
        if (out.empty() && why_none) *why_none = "the Vulkan loader reports no physical device";
    } catch (const Error& e) {
        if (why_none) *why_none = e.what();
    }
    return out;
}

std::string api_version_string(uint32_t v) {
    return strfmt("%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

std::string device_line(const DeviceInfo& d) {
    return strfmt("  Vulkan%d: %s (%s, %llu MiB, driver %s, Vulkan %s)", d.index, d.name.c_str(), d.type.c_str(),
                  (unsigned long long)(d.memory >> 20), d.driver.c_str(), api_version_string(d.api_version).c_str());
}

}  // namespace bee::gpu
