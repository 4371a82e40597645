// gpu/pipeline: descriptor set layout, pipeline layout and compute pipeline of one shader.
#include "gpu/pipeline.h"

#include <cstring>
#include <vector>

#include "base/error.h"
#include "gpu/device.h"
#include "gpu/shaders.h"
#include "gpu/vk_check.h"

namespace bee::gpu {

Pipeline::Pipeline(Device& dev, const char* name, int n_buffers, uint32_t push_bytes, const std::vector<uint32_t>& spec)
    : dev_(dev), name_(name), n_buffers_(n_buffers), push_bytes_(push_bytes) {
    const ShaderBlob* blob = find_shader(name);
    if (!blob) fail("gpu: no embedded shader '%s'", name);
    if (push_bytes > dev.limits().maxPushConstantsSize)
        fail("gpu: shader %s needs %u bytes of push constants, the device allows %u", name, push_bytes,
             dev.limits().maxPushConstantsSize);

    std::vector<VkDescriptorSetLayoutBinding> bindings((size_t)n_buffers);
    for (int i = 0; i < n_buffers; ++i) {
        bindings[(size_t)i] = {};
        bindings[(size_t)i].binding = (uint32_t)i;
        bindings[(size_t)i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        bindings[(size_t)i].descriptorCount = 1;
        bindings[(size_t)i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dl{};
    dl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    dl.bindingCount = (uint32_t)n_buffers;
    dl.pBindings = bindings.data();
    vk_check(vkCreateDescriptorSetLayout(dev.handle(), &dl, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");

    VkPushConstantRange pc{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo pl{};
    pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout_;
    pl.pushConstantRangeCount = push_bytes ? 1 : 0;
    pl.pPushConstantRanges = &pc;
    if (vkCreatePipelineLayout(dev.handle(), &pl, nullptr, &layout_) != VK_SUCCESS) {
        vkDestroyDescriptorSetLayout(dev.handle(), set_layout_, nullptr);
        fail("gpu: vkCreatePipelineLayout failed for %s", name);
    }

    std::vector<uint32_t> words(blob->size / 4);  // note: a copy, so the code pointer is a real uint32_t array
    memcpy(words.data(), blob->code, words.size() * 4);
    VkShaderModuleCreateInfo sm{};
    sm.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    sm.codeSize = words.size() * 4;
    sm.pCode = words.data();
    VkShaderModule module;
    if (vkCreateShaderModule(dev.handle(), &sm, nullptr, &module) != VK_SUCCESS) {
        vkDestroyPipelineLayout(dev.handle(), layout_, nullptr);
        vkDestroyDescriptorSetLayout(dev.handle(), set_layout_, nullptr);
        fail("gpu: shader module %s was refused by the driver", name);
    }

    VkComputePipelineCreateInfo cp{};
    cp.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    cp.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cp.stage.module = module;
    cp.stage.pName = "main";
    std::vector<VkSpecializationMapEntry> entries(spec.size());
    for (size_t i = 0; i < spec.size(); ++i) entries[i] = {(uint32_t)i, (uint32_t)(i * 4), 4};
    VkSpecializationInfo si{(uint32_t)spec.size(), entries.data(), spec.size() * 4, spec.data()};
    if (!spec.empty()) cp.stage.pSpecializationInfo = &si;
    cp.layout = layout_;
    const VkResult r = vkCreateComputePipelines(dev.handle(), dev.pipeline_cache(), 1, &cp, nullptr, &pipeline_);
    vkDestroyShaderModule(dev.handle(), module, nullptr);
    if (r != VK_SUCCESS) {
        vkDestroyPipelineLayout(dev.handle(), layout_, nullptr);
        vkDestroyDescriptorSetLayout(dev.handle(), set_layout_, nullptr);
        fail("gpu: building pipeline %s: %s", name, vk_result_name(r));
    }
}

Pipeline::~Pipeline() {
    vkDestroyPipeline(dev_.handle(), pipeline_, nullptr);
    vkDestroyPipelineLayout(dev_.handle(), layout_, nullptr);
    vkDestroyDescriptorSetLayout(dev_.handle(), set_layout_, nullptr);
}

}  // namespace bee::gpu
