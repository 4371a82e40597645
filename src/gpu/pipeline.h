// gpu/pipeline: a compute pipeline built from one embedded shader: its buffer bindings and push constants.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bee::gpu {

class Device;

class Pipeline {
public:
    // Shader `name` from the embedded table (gpu/shaders.h) with `n_buffers` storage buffers at bindings
    // 0..n_buffers-1 and `push_bytes` of push constants; built through the device's pipeline cache. `spec`
    // gives the shader's 32-bit specialization constants constant_id 0, 1, ... (core Vulkan 1.0), so the
    // driver compiles branches on them away.
    Pipeline(Device& dev, const char* name, int n_buffers, uint32_t push_bytes, const std::vector<uint32_t>& spec = {});
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    const std::string& name() const { return name_; }
    int n_buffers() const { return n_buffers_; }
    uint32_t push_bytes() const { return push_bytes_; }
    VkPipeline handle() const { return pipeline_; }
    VkPipelineLayout layout() const { return layout_; }
    VkDescriptorSetLayout set_layout() const { return set_layout_; }

private:
    Device& dev_;
    std::string name_;
    int n_buffers_;
    uint32_t push_bytes_;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipeline pipeline_ = VK_NULL_HANDLE;
};

}  // namespace bee::gpu
