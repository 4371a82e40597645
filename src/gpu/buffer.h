// gpu/buffer: storage buffers in device-local or host-visible memory, uploads and downloads through staging.
#pragma once
#include <vulkan/vulkan.h>

#include <cstddef>

namespace bee::gpu {

class Device;

enum class Memory {
    device,  // device-local: weights, activations, KV (mapped directly where the device allows, e.g. llvmpipe)
    host,    // host-visible and coherent: staging, results read back every step
};

class Buffer {
public:
    // Holds `bytes` plus 4 to 19 zero bytes (to a multiple of 16): shaders read weights in 4-byte words and may read
    // one word past a row's last byte. Throws Error "out of device memory" when the allocation fails.
    Buffer(Device& dev, size_t bytes, Memory where);
    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    VkBuffer handle() const { return buffer_; }
    size_t size() const { return size_; }
    void* mapped() const { return mapped_; }  // nullptr when not host-visible

    // Copies host bytes in at `offset` (directly when mapped, else through a staging buffer) and waits.
    void upload(const void* src, size_t bytes, size_t offset = 0);
    // Copies bytes out at `offset` into host memory and waits.
    void download(void* dst, size_t bytes, size_t offset = 0) const;
    // Fills the whole buffer with zeros and waits.
    void zero();

private:
    Device& dev_;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    size_t size_ = 0;
    void* mapped_ = nullptr;
};

// A byte range of a buffer as a shader binding sees it. size 0 means "to the end".
struct BufferRange {
    const Buffer* buffer = nullptr;
    size_t offset = 0;
    size_t size = 0;
};

inline BufferRange whole(const Buffer& b) { return {&b, 0, b.size()}; }

}  // namespace bee::gpu
