// gpu/command_list: recording dispatches and copies, resubmission, timestamps.
#include "gpu/command_list.h"

#include <vector>

#include "base/error.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "gpu/vk_check.h"

namespace bee::gpu {

namespace {
constexpr int kMaxBindings = 8;  // storage buffers per dispatch
}

CommandList::CommandList(Device& dev, int max_dispatches, int max_timestamps)
    : dev_(dev), max_dispatches_(max_dispatches), max_timestamps_(max_timestamps) {
    VkCommandBufferAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = dev.command_pool();
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    vk_check(vkAllocateCommandBuffers(dev.handle(), &ai, &cb_), "vkAllocateCommandBuffers");

    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, (uint32_t)(max_dispatches * kMaxBindings)};
    VkDescriptorPoolCreateInfo dp{};
    dp.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    dp.maxSets = (uint32_t)max_dispatches;
    dp.poolSizeCount = 1;
    dp.pPoolSizes = &size;
    vk_check(vkCreateDescriptorPool(dev.handle(), &dp, nullptr, &pool_), "vkCreateDescriptorPool");

    VkFenceCreateInfo fci{};
    fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    vk_check(vkCreateFence(dev.handle(), &fci, nullptr, &fence_), "vkCreateFence");

    if (dev.timestamps()) {
        VkQueryPoolCreateInfo q{};
        q.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
        q.queryType = VK_QUERY_TYPE_TIMESTAMP;
        q.queryCount = (uint32_t)max_timestamps;
        vk_check(vkCreateQueryPool(dev.handle(), &q, nullptr, &queries_), "vkCreateQueryPool");
    }
}

CommandList::~CommandList() {
    vkDeviceWaitIdle(dev_.handle());
    if (queries_) vkDestroyQueryPool(dev_.handle(), queries_, nullptr);
    vkDestroyFence(dev_.handle(), fence_, nullptr);
    vkDestroyDescriptorPool(dev_.handle(), pool_, nullptr);
    vkFreeCommandBuffers(dev_.handle(), dev_.command_pool(), 1, &cb_);
}

void CommandList::begin() {
    vk_check(vkResetCommandBuffer(cb_, 0), "vkResetCommandBuffer");
    vk_check(vkResetDescriptorPool(dev_.handle(), pool_, 0), "vkResetDescriptorPool");
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    vk_check(vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
    if (queries_) vkCmdResetQueryPool(cb_, queries_, 0, (uint32_t)max_timestamps_);
    n_dispatches_ = n_timestamps_ = 0;
    recording_ = true;
    grouped_ = barrier_owed_ = false;
}

void CommandList::begin_group() {
    if (grouped_) fail("gpu: begin_group() inside a group");
    grouped_ = true;
}

void CommandList::end_group() {
    if (!grouped_) fail("gpu: end_group() without begin_group()");
    grouped_ = false;
    if (barrier_owed_) barrier();
}

void CommandList::barrier() {
    if (grouped_) {
        barrier_owed_ = true;
        return;
    }
    barrier_owed_ = false;
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cb_, stages, stages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void CommandList::dispatch(const Pipeline& p, std::initializer_list<BufferRange> buffers, const void* push,
                           uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
    if (!recording_) fail("gpu: dispatch of %s outside begin() / end()", p.name().c_str());
    if ((int)buffers.size() != p.n_buffers())
        fail("gpu: %s takes %d buffers, %zu given", p.name().c_str(), p.n_buffers(), buffers.size());
    if (n_dispatches_ == max_dispatches_) fail("gpu: command list full (%d dispatches)", max_dispatches_);
    const uint32_t max_groups = dev_.limits().maxComputeWorkGroupCount[0];
    if (groups_x > max_groups || groups_y > dev_.limits().maxComputeWorkGroupCount[1] ||
        groups_z > dev_.limits().maxComputeWorkGroupCount[2])
        fail("gpu: %s: %u x %u x %u workgroups is past the device's limit", p.name().c_str(), groups_x, groups_y,
             groups_z);
    if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;

    VkDescriptorSetLayout layout = p.set_layout();
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set;
    vk_check(vkAllocateDescriptorSets(dev_.handle(), &ai, &set), "vkAllocateDescriptorSets");
    ++n_dispatches_;

    VkDescriptorBufferInfo infos[kMaxBindings];
    VkWriteDescriptorSet writes[kMaxBindings];
    int i = 0;
    for (const BufferRange& b : buffers) {
        if (!b.buffer) fail("gpu: %s: binding %d has no buffer", p.name().c_str(), i);
        if (b.offset % dev_.limits().minStorageBufferOffsetAlignment)
            fail("gpu: %s: binding %d at offset %zu, not a multiple of the device's %llu", p.name().c_str(), i,
                 b.offset, (unsigned long long)dev_.limits().minStorageBufferOffsetAlignment);
        infos[i] = {b.buffer->handle(), b.offset, b.size ? b.size : VK_WHOLE_SIZE};
        writes[i] = {};
        writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[i].dstSet = set;
        writes[i].dstBinding = (uint32_t)i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
        ++i;
    }
    vkUpdateDescriptorSets(dev_.handle(), (uint32_t)i, writes, 0, nullptr);

    vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.handle());
    vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout(), 0, 1, &set, 0, nullptr);
    if (p.push_bytes()) vkCmdPushConstants(cb_, p.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_bytes(), push);
    vkCmdDispatch(cb_, groups_x, groups_y, groups_z);
    barrier();
}

void CommandList::copy(BufferRange src, BufferRange dst) {
    if (!recording_) fail("gpu: copy outside begin() / end()");
    const size_t ns = src.size ? src.size : src.buffer->size() - src.offset;
    const size_t nd = dst.size ? dst.size : dst.buffer->size() - dst.offset;
    VkBufferCopy c{src.offset, dst.offset, ns < nd ? ns : nd};
    vkCmdCopyBuffer(cb_, src.buffer->handle(), dst.buffer->handle(), 1, &c);
    barrier();
}

int CommandList::timestamp() {
    if (!queries_) return -1;
    if (n_timestamps_ == max_timestamps_) fail("gpu: command list has room for %d timestamps", max_timestamps_);
    vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, (uint32_t)n_timestamps_);
    return n_timestamps_++;
}

void CommandList::end() {
    if (grouped_) fail("gpu: end() inside a group");
    vk_check(vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
    recording_ = false;
}

void CommandList::submit_and_wait() {
    if (recording_) fail("gpu: submit before end()");
    VkSubmitInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb_;
    vk_check(vkQueueSubmit(dev_.queue(), 1, &si, fence_), "vkQueueSubmit");
    const VkResult r = vkWaitForFences(dev_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX);
    vkResetFences(dev_.handle(), 1, &fence_);
    vk_check(r, "vkWaitForFences");
}

double CommandList::elapsed_ns(int from, int to) const {
    if (!queries_ || from < 0 || to < 0) return 0;
    uint64_t t[2];
    vk_check(vkGetQueryPoolResults(dev_.handle(), queries_, (uint32_t)from, 1, sizeof t[0], &t[0], sizeof t[0],
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults");
    vk_check(vkGetQueryPoolResults(dev_.handle(), queries_, (uint32_t)to, 1, sizeof t[1], &t[1], sizeof t[1],
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults");
    return (double)(t[1] - t[0]) * dev_.timestamp_period_ns();
}

}  // namespace bee::gpu
