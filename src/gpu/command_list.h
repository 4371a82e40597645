// gpu/command_list: a command buffer recorded once and submitted any number of times, with its own
// descriptor sets, fence and timestamp queries.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>

#include "gpu/buffer.h"

namespace bee::gpu {

class Device;
class Pipeline;

class CommandList {
public:
    // Room for `max_dispatches` dispatches (descriptor sets) and `max_timestamps` timestamps per recording.
    explicit CommandList(Device& dev, int max_dispatches = 256, int max_timestamps = 64);
    ~CommandList();
    CommandList(const CommandList&) = delete;
    CommandList& operator=(const CommandList&) = delete;

    // Starts a new recording (drops the previous one and its descriptor sets).
    void begin();
    // Binds `buffers` to bindings 0.. of `p`, pushes `push` (p.push_bytes() bytes) and dispatches
    // groups_x * groups_y * groups_z workgroups, followed by a barrier so the next command sees the writes.
    void dispatch(const Pipeline& p, std::initializer_list<BufferRange> buffers, const void* push, uint32_t groups_x,
                  uint32_t groups_y = 1, uint32_t groups_z = 1);
    // Copies src into dst (the smaller of the two sizes), with a barrier after it.
    void copy(BufferRange src, BufferRange dst);
    // The dispatches and copies between begin_group() and end_group() do not depend on each other (none
    // writes what another reads or writes): no barriers between them, one after the last.
    void begin_group();
    void end_group();
    // Writes a GPU timestamp once everything before it has finished; returns its index (-1 when the
    // queue has no timestamps).
    int timestamp();
    void end();

    // Submits the recorded commands and waits for them; can be called again without re-recording.
    void submit_and_wait();
    // Nanoseconds between two timestamps of the last submission (0 when unsupported).
    double elapsed_ns(int from, int to) const;

private:
    void barrier();

    Device& dev_;
    VkCommandBuffer cb_ = VK_NULL_HANDLE;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkQueryPool queries_ = VK_NULL_HANDLE;
    int max_dispatches_;
    int max_timestamps_;
    int n_dispatches_ = 0;
    int n_timestamps_ = 0;
    bool recording_ = false;
    bool grouped_ = false, barrier_owed_ = false;
};

}  // namespace bee::gpu
