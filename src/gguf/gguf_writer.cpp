// gguf/gguf_writer: serializes metadata, tensor infos and aligned tensor data as GGUF v3 (byte-for-byte deterministic).
#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "base/error.h"

namespace bee {

namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMaxKeyLen = 65535;
constexpr size_t kMaxTensorNameLen = 1024;
constexpr int kMaxArrayDepth = 8;  // the reader's limit

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
    const uint8_t* b = (const uint8_t*)p;
    out.insert(out.end(), b, b + n);
}

template <class T>
void put(std::vector<uint8_t>& out, T v) {
    put_bytes(out, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    put_bytes(out, s.data(), s.size());
}

void pad_to(std::vector<uint8_t>& out, uint64_t alignment) {
    out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
}

void check_unsigned(const std::string& key, const GgufValue& v, uint64_t max) {
    if (v.u64 > max)
        fail("gguf writer: key '%s': value %" PRIu64 " out of range for %s", key.c_str(), v.u64,
             gguf_value_type_name(v.type));
}

void check_signed(const std::string& key, const GgufValue& v, int64_t min, int64_t max) {
    if (v.i64 < min || v.i64 > max)
        fail("gguf writer: key '%s': value %" PRId64 " out of range for %s", key.c_str(), v.i64,
             gguf_value_type_name(v.type));
}

void put_value(std::vector<uint8_t>& out, const std::string& key, const GgufValue& v, int depth);

void put_array(std::vector<uint8_t>& out, const std::string& key, const GgufValue& v, int depth) {
    if (depth > kMaxArrayDepth)
        fail("gguf writer: key '%s': arrays nested more than %d deep", key.c_str(), kMaxArrayDepth);
    if ((uint32_t)v.arr_type > (uint32_t)GgufValueType::FLOAT64)
        fail("gguf writer: key '%s': unknown array element type %u", key.c_str(), (unsigned)v.arr_type);
    put<uint32_t>(out, (uint32_t)v.arr_type);
    put<uint64_t>(out, v.arr.size());
    for (const GgufValue& e : v.arr) {
        if (e.type != v.arr_type)
            fail("gguf writer: key '%s': array of %s holds a %s element", key.c_str(), gguf_value_type_name(v.arr_type),
                 gguf_value_type_name(e.type));
        put_value(out, key, e, depth);
    }
}

// The value's payload (no type tag; arrays carry their element type and count).
void put_value(std::vector<uint8_t>& out, const std::string& key, const GgufValue& v, int depth) {
    switch (v.type) {
        case GgufValueType::UINT8:
            check_unsigned(key, v, UINT8_MAX);
            put<uint8_t>(out, (uint8_t)v.u64);
            break;
        case GgufValueType::UINT16:
            check_unsigned(key, v, UINT16_MAX);
            put<uint16_t>(out, (uint16_t)v.u64);
            break;
        case GgufValueType::UINT32:
            check_unsigned(key, v, UINT32_MAX);
            put<uint32_t>(out, (uint32_t)v.u64);
            break;
        case GgufValueType::UINT64: put<uint64_t>(out, v.u64); break;
        case GgufValueType::INT8:
            check_signed(key, v, INT8_MIN, INT8_MAX);
            put<int8_t>(out, (int8_t)v.i64);
            break;
        case GgufValueType::INT16:
            check_signed(key, v, INT16_MIN, INT16_MAX);
            put<int16_t>(out, (int16_t)v.i64);
            break;
        case GgufValueType::INT32:
            check_signed(key, v, INT32_MIN, INT32_MAX);
            put<int32_t>(out, (int32_t)v.i64);
            break;
        case GgufValueType::INT64: put<int64_t>(out, v.i64); break;
        case GgufValueType::FLOAT32: put<float>(out, (float)v.f64); break;
        case GgufValueType::FLOAT64: put<double>(out, v.f64); break;
        case GgufValueType::BOOL: put<uint8_t>(out, v.u64 != 0 ? 1 : 0); break;
        case GgufValueType::STRING: put_string(out, v.str); break;
        case GgufValueType::ARRAY: put_array(out, key, v, depth + 1); break;
        default: fail("gguf writer: key '%s': unknown value type %u", key.c_str(), (unsigned)v.type);
    }
}

}  // namespace

void GgufWriter::set(const std::string& key, const GgufValue& v) {
    if (key.empty() || key.size() > kMaxKeyLen)
        fail("gguf writer: key length %zu, expected 1 to %zu bytes", key.size(), kMaxKeyLen);
    for (auto& [k, old] : kv_) {
        if (k == key) {
            old = v;
            return;
        }
    }
    kv_.emplace_back(key, v);
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) {
    set(key, GgufValue::make_uint(GgufValueType::UINT32, v));
}
void GgufWriter::set_i32(const std::string& key, int32_t v) { set(key, GgufValue::make_int(GgufValueType::INT32, v)); }
void GgufWriter::set_u64(const std::string& key, uint64_t v) {
    set(key, GgufValue::make_uint(GgufValueType::UINT64, v));
}
void GgufWriter::set_f32(const std::string& key, float v) {
    set(key, GgufValue::make_float(GgufValueType::FLOAT32, v));
}
void GgufWriter::set_bool(const std::string& key, bool v) { set(key, GgufValue::make_bool(v)); }
void GgufWriter::set_str(const std::string& key, const std::string& v) { set(key, GgufValue::make_str(v)); }

void GgufWriter::set_str_array(const std::string& key, const std::vector<std::string>& v) {
    std::vector<GgufValue> elems;
    elems.reserve(v.size());
    for (const std::string& s : v) elems.push_back(GgufValue::make_str(s));
    set(key, GgufValue::make_array(GgufValueType::STRING, std::move(elems)));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
    std::vector<GgufValue> elems;
    elems.reserve(v.size());
    for (float f : v) elems.push_back(GgufValue::make_float(GgufValueType::FLOAT32, f));
    set(key, GgufValue::make_array(GgufValueType::FLOAT32, std::move(elems)));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    std::vector<GgufValue> elems;
    elems.reserve(v.size());
    for (int32_t i : v) elems.push_back(GgufValue::make_int(GgufValueType::INT32, i));
    set(key, GgufValue::make_array(GgufValueType::INT32, std::move(elems)));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne, const void* data,
                            size_t nbytes) {
    const char* n = name.c_str();
    if (name.empty() || name.size() > kMaxTensorNameLen)
        fail("gguf writer: tensor '%s': name length %zu, expected 1 to %zu bytes", n, name.size(), kMaxTensorNameLen);
    for (const Tensor& t : tensors_)
        if (t.name == name) fail("gguf writer: tensor '%s': duplicate name", n);
    GgmlTypeInfo info = ggml_type_info(type);
    if (!info.name) fail("gguf writer: tensor '%s': unknown type id %u", n, (unsigned)type);
    if (ne.empty() || ne.size() > 4) fail("gguf writer: tensor '%s': %zu dims, expected 1 to 4", n, ne.size());
    int64_t count = 1;
    for (int64_t d : ne)
        if (d <= 0 || __builtin_mul_overflow(count, d, &count))
            fail("gguf writer: tensor '%s': bad shape (a dim is %" PRId64 ")", n, d);
    if (ne[0] % info.block_size != 0)
        fail("gguf writer: tensor '%s': ne[0] = %" PRId64 " is not a multiple of the block size %" PRId64 " of %s", n,
             ne[0], info.block_size, info.name);
    uint64_t expected = 0;
    if (__builtin_mul_overflow((uint64_t)(count / info.block_size), (uint64_t)info.type_size, &expected))
        fail("gguf writer: tensor '%s': byte count overflows", n);
    if (nbytes != expected)
        fail("gguf writer: tensor '%s': got %zu bytes of data, shape and type %s need %" PRIu64, n, nbytes, info.name,
             expected);
    if (nbytes > 0 && !data) fail("gguf writer: tensor '%s': no data", n);
    const uint8_t* b = (const uint8_t*)data;
    tensors_.push_back(Tensor{name, type, ne, std::vector<uint8_t>(b, b + nbytes)});
}

std::vector<uint8_t> GgufWriter::serialize() const {
    uint64_t a = alignment_;
    if (a == 0 || (a & (a - 1)) != 0 || a > UINT32_MAX)
        fail("gguf writer: alignment %" PRIu64 " is not a power of two that fits uint32", a);
    std::vector<std::pair<std::string, GgufValue>> kv = kv_;
    bool has_alignment_key = false;
    for (const auto& [k, v] : kv) {
        if (k != "general.alignment") continue;
        has_alignment_key = true;
        if (v.type != GgufValueType::UINT32 || v.u64 != a)
            fail("gguf writer: general.alignment (%s %" PRIu64 ") disagrees with the writer's alignment %" PRIu64,
                 gguf_value_type_desc(v).c_str(), v.u64, a);
    }
    if (!has_alignment_key && a != kDefaultAlignment)
        kv.emplace_back("general.alignment", GgufValue::make_uint(GgufValueType::UINT32, a));

    std::vector<uint8_t> out;
    put_bytes(out, "GGUF", 4);
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, kv.size());
    for (const auto& [k, v] : kv) {
        put_string(out, k);
        put<uint32_t>(out, (uint32_t)v.type);
        put_value(out, k, v, 0);
    }
    uint64_t offset = 0;  // relative to the data section
    for (const Tensor& t : tensors_) {
        put_string(out, t.name);
        put<uint32_t>(out, (uint32_t)t.ne.size());
        for (int64_t d : t.ne) put<int64_t>(out, d);
        put<uint32_t>(out, (uint32_t)t.type);
        put<uint64_t>(out, offset);
        offset += (t.data.size() + a - 1) / a * a;
    }
    pad_to(out, a);
    out.reserve(out.size() + offset);
    for (const Tensor& t : tensors_) {
        put_bytes(out, t.data.data(), t.data.size());
        pad_to(out, a);
    }
    return out;
}

// note: writes "<path>.tmp" and renames it over `path`, so readers never see a half-written file.
void GgufWriter::write(const std::string& path) const {
    std::vector<uint8_t> bytes = serialize();
    std::string tmp = path + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f) fail("%s: cannot write: %s", path.c_str(), strerror(errno));
    bool ok = fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(tmp.c_str(), path.c_str()) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(tmp.c_str());
        fail("%s: cannot write: %s", path.c_str(), strerror(err));
    }
}

}  // namespace bee
