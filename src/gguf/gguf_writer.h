// gguf/gguf_writer: builds a GGUF v3 file in memory (metadata, tensor table, aligned data) and writes it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace bee {

class GgufWriter {
public:
    explicit GgufWriter(uint64_t alignment = 32) : alignment_(alignment) {}

    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_u64(const std::string& key, uint64_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_str(const std::string& key, const std::string& v);
    void set_str_array(const std::string& key, const std::vector<std::string>& v);
    void set_f32_array(const std::string& key, const std::vector<float>& v);
    void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
    // Any value, including nested arrays. Replaces an existing key (keeps its position).
    void set(const std::string& key, const GgufValue& v);

    // Adds a tensor; `data` holds ggml_row_size(type, ne[0]) * ne[1]*ne[2]*ne[3] bytes (copied).
    // Throws Error at once on a duplicate name, a bad shape or type, or a wrong byte count.
    void add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne, const void* data,
                    size_t nbytes);

    // The whole file image. Throws Error on inconsistent input (values out of range for their type,
    // array elements of the wrong type, a bad alignment or a general.alignment key that disagrees).
    // A non-default alignment is recorded as general.alignment (uint32) if that key is not set.
    std::vector<uint8_t> serialize() const;
    // serialize() to `path`; throws Error naming the path if it cannot be written.
    void write(const std::string& path) const;

private:
    struct Tensor {
        std::string name;
        GgmlType type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> data;
    };
    uint64_t alignment_;
    std::vector<std::pair<std::string, GgufValue>> kv_;
    std::vector<Tensor> tensors_;
};

}  // namespace bee
