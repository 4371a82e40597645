// gpu/buffer: buffer allocation (one VkDeviceMemory each), mapped or staged copies.
#include "gpu/buffer.h"

#include <cstring>
#include <memory>

#include "base/error.h"
#include "gpu/device.h"
#include "gpu/vk_check.h"

namespace bee::gpu {

Buffer::Buffer(Device& dev, size_t bytes, Memory where) : dev_(dev), size_((bytes + 4 + 15) & ~(size_t)15) {
    VkBufferCreateInfo bci{};
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.size = size_;
    bci.usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    vk_check(vkCreateBuffer(dev.handle(), &bci, nullptr, &buffer_), "vkCreateBuffer");

    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev.handle(), buffer_, &req);
    int type = -1;
    if (where == Memory::device) {
        // note: mapped device memory only where host and device share it (llvmpipe, integrated GPUs); on a
        // discrete GPU a host-visible device-local type may be the small BAR heap, so weights go to plain VRAM.
        const bool unified = dev.info().type == "cpu" || dev.info().type == "integrated";
        type = dev.find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                    unified ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                            : 0);
        if (type < 0) type = dev.find_memory_type(req.memoryTypeBits, 0, 0);
    } else {
        type = dev.find_memory_type(req.memoryTypeBits,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                    VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    }
    if (type < 0) {
        vkDestroyBuffer(dev.handle(), buffer_, nullptr);
        fail("gpu: %s has no memory type for a %s buffer", dev.info().name.c_str(),
             where == Memory::device ? "device" : "host-visible");
    }
    VkMemoryAllocateInfo mai{};
    mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = (uint32_t)type;
    const VkResult r = vkAllocateMemory(dev.handle(), &mai, nullptr, &memory_);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(dev.handle(), buffer_, nullptr);
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
            fail("gpu: out of %s memory allocating %.1f MiB on %s",
                 r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "device" : "host", (double)size_ / (1 << 20),
                 dev.info().name.c_str());
        vk_check(r, "vkAllocateMemory");
    }
    vk_check(vkBindBufferMemory(dev.handle(), buffer_, memory_, 0), "vkBindBufferMemory");

    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(dev.physical(), &mp);
    const VkMemoryPropertyFlags flags = mp.memoryTypes[type].propertyFlags;
    const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if ((flags & mappable) == mappable && (where == Memory::host || dev.map_device_memory()))
        vk_check(vkMapMemory(dev.handle(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
    zero();
}

Buffer::~Buffer() {
    if (mapped_) vkUnmapMemory(dev_.handle(), memory_);
    vkDestroyBuffer(dev_.handle(), buffer_, nullptr);
    vkFreeMemory(dev_.handle(), memory_, nullptr);
}

void Buffer::upload(const void* src, size_t bytes, size_t offset) {
    if (offset + bytes > size_) fail("gpu: upload of %zu bytes at %zu past a %zu-byte buffer", bytes, offset, size_);
    if (bytes == 0) return;
    if (mapped_) {
        memcpy((char*)mapped_ + offset, src, bytes);
        return;
    }
    Buffer staging(dev_, bytes, Memory::host);
    memcpy(staging.mapped(), src, bytes);
    dev_.run_once([&](VkCommandBuffer cb) {
        VkBufferCopy c{0, offset, bytes};
        vkCmdCopyBuffer(cb, staging.handle(), buffer_, 1, &c);
    });
}

void Buffer::download(void* dst, size_t bytes, size_t offset) const {
    if (offset + bytes > size_) fail("gpu: download of %zu bytes at %zu past a %zu-byte buffer", bytes, offset, size_);
    if (bytes == 0) return;
    if (mapped_) {
        memcpy(dst, (const char*)mapped_ + offset, bytes);
        return;
    }
    Buffer staging(dev_, bytes, Memory::host);
    dev_.run_once([&](VkCommandBuffer cb) {
        VkBufferCopy c{offset, 0, bytes};
        vkCmdCopyBuffer(cb, buffer_, staging.handle(), 1, &c);
    });
    memcpy(dst, staging.mapped(), bytes);
}

void Buffer::zero() {
    if (mapped_) {
        memset(mapped_, 0, size_);
        return;
    }
    dev_.run_once([&](VkCommandBuffer cb) { vkCmdFillBuffer(cb, buffer_, 0, size_, 0); });
}

}  // namespace bee::gpu
