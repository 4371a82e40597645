// gguf/gguf: GGUF v2/v3 reader over mmap with full validation; every error names file, field and byte offset.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "gguf/ggml_type.h"

namespace bee {

enum class GgufValueType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);

// One metadata value. Scalars live in the matching field (integers of any width in i64/u64,
// floats in f64, bool in u64); arrays hold their element type and elements (arrays may nest).
struct GgufValue {
    GgufValueType type = GgufValueType::UINT8;
    uint64_t u64 = 0;                               // UINT8/16/32/64, BOOL
    int64_t i64 = 0;                                // INT8/16/32/64 (also set for unsigned values that fit)
    double f64 = 0;                                 // FLOAT32/64
    std::string str;                                // STRING
    GgufValueType arr_type = GgufValueType::UINT8;  // ARRAY: element type
    std::vector<GgufValue> arr;                     // ARRAY: elements

    bool is_integer() const;
    bool is_float() const { return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64; }

    // Builders (writer, tests). Each fills every field the reader would fill for that type;
    // make_uint/make_int/make_float take the type to tag the value with.
    static GgufValue make_uint(GgufValueType t, uint64_t v);  // UINT8/16/32/64
    static GgufValue make_int(GgufValueType t, int64_t v);    // INT8/16/32/64
    static GgufValue make_float(GgufValueType t, double v);   // FLOAT32/64
    static GgufValue make_bool(bool v);
    static GgufValue make_str(std::string v);
    static GgufValue make_array(GgufValueType elem, std::vector<GgufValue> elems);
};

// "uint32", "string", "array of string", "array of array" ...: the value's type for messages.
std::string gguf_value_type_desc(const GgufValue& v);

struct GgufTensor {
    std::string name;
    GgmlType type = GgmlType::F32;
    int n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};   // ne[0] is the contiguous (row) dimension, as in ggml
    uint64_t offset = 0;            // relative to the data section
    const uint8_t* data = nullptr;  // into the mapping
    size_t nbytes = 0;

    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
public:
    // Maps and validates the whole file. Throws Error "<path>: <field> at byte <offset>: <problem>".
    // Limits beyond the spec's: keys <= 65535 bytes, tensor names <= 1024, strings <= 1 GiB, arrays
    // nested <= 8 deep, at most 2^23 array elements in all; bools must be 0 or 1; every tensor dim > 0.
    static GgufFile open(const std::string& path);
    // Validates an in-memory image (fuzzing, tests). `name` is used in messages. The bytes must
    // outlive the returned object.
    static GgufFile parse(const uint8_t* data, size_t size, const std::string& name);

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    size_t file_size() const { return size_; }

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
    const GgufValue* find(const std::string& key) const;
    // Replaces the value of `key`, or appends it (metadata overrides, gguf/gguf_override.h).
    void set_metadata(const std::string& key, GgufValue value);
    bool has(const std::string& key) const { return find(key) != nullptr; }

    // Typed getters: throw Error naming the file and key if missing (no default given) or of the
    // wrong type. Integer getters accept any integer type whose value fits.
    std::string get_str(const std::string& key) const;
    std::string get_str(const std::string& key, const std::string& def) const;
    int64_t get_int(const std::string& key) const;
    int64_t get_int(const std::string& key, int64_t def) const;
    double get_float(const std::string& key) const;  // accepts integers too
    double get_float(const std::string& key, double def) const;
    bool get_bool(const std::string& key, bool def) const;
    std::vector<std::string> get_str_array(const std::string& key) const;
    std::vector<float> get_float_array(const std::string& key) const;  // FLOAT32/64 or integer elements
    std::vector<int64_t> get_int_array(const std::string& key) const;

    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(const std::string& name) const;

private:
    std::string path_;
    std::shared_ptr<MappedFile> map_;  // empty for parse()
    const uint8_t* base_ = nullptr;
    size_t size_ = 0;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> kv_;
    std::map<std::string, size_t> kv_index_;
    std::vector<GgufTensor> tensors_;
    std::map<std::string, size_t> tensor_index_;

    friend class GgufParser;
};

}  // namespace bee
