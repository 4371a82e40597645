// gguf/gguf: the GGUF v2/v3 parser (header, metadata, tensor table, data ranges) with bounds checks on every read.
// Layout per the GGUF spec (ggml/docs/gguf.md): header, metadata KV pairs, tensor infos, padding, data.
#include "gguf/gguf.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace bee {

static_assert(std::endian::native == std::endian::little, "GGUF reader assumes a little-endian host");
static_assert(sizeof(size_t) == sizeof(uint64_t), "GGUF reader assumes a 64-bit host");

namespace {

constexpr uint64_t kMaxKeyLen = 65535;               // spec: keys are at most 2^16-1 bytes
constexpr uint64_t kMaxTensorNameLen = 1024;         // ggml itself stops at 63
constexpr uint64_t kMaxStringLen = 1ull << 30;       // 1 GiB, and never past the end of the file
constexpr int kMaxArrayDepth = 8;                    // arrays of arrays, nested at most this deep
constexpr uint64_t kMaxMetadataValues = 1ull << 23;  // array elements in all (each is a ~100-byte GgufValue)
constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMinKvBytes = 8 + 1 + 4 + 1;                  // key length, 1-byte key, type, 1-byte value
constexpr size_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, ne[0], type, offset

// Smallest encoding of one value of type t (array: element type + count).
size_t min_value_bytes(GgufValueType t) {
    switch (t) {
        case GgufValueType::UINT8:
        case GgufValueType::INT8:
        case GgufValueType::BOOL: return 1;
        case GgufValueType::UINT16:
        case GgufValueType::INT16: return 2;
        case GgufValueType::UINT32:
        case GgufValueType::INT32:
        case GgufValueType::FLOAT32: return 4;
        case GgufValueType::STRING: return 8;
        case GgufValueType::ARRAY: return 12;
        default: return 8;
    }
}

// A name from the file, made safe to print: non-printable bytes escaped, long names cut.
std::string printable(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size() && i < 120; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') out += (char)c;
        else out += strfmt("\\x%02x", c);
    }
    if (s.size() > 120) out += strfmt("...(%zu bytes)", s.size());
    return out;
}

}  // namespace

// Reads one image front to back into a GgufFile. Every failure names the field being read and
// the byte offset where it starts.
class GgufParser {
public:
    GgufParser(GgufFile& f, const uint8_t* data, size_t size) : f_(f), p_(data), size_(size) {}
    void run();

private:
    GgufFile& f_;
    const uint8_t* p_;
    size_t size_;
    size_t pos_ = 0;
    std::string field_;          // what is being read, e.g. "metadata key 'x'"
    std::vector<uint64_t> idx_;  // array element indices under field_ (nested arrays)
    uint64_t n_values_ = 0;      // array elements read so far

    [[noreturn]] void bad(uint64_t at, const std::string& problem) const;
    const uint8_t* take(size_t n, const char* what);
    template <class T>
    T read(const char* what) {
        T v;
        std::memcpy(&v, take(sizeof(T), what), sizeof(T));
        return v;
    }
    std::string read_string(uint64_t max_len, const char* what);
    GgufValueType read_value_type(const char* what);
    void read_value(GgufValue& v, GgufValueType t, int depth);
    void read_array(GgufValue& v, int depth);
    void read_header(uint64_t* n_tensors, uint64_t* n_kv);
    void read_kv(uint64_t i, std::vector<size_t>& key_at);
    void check_alignment(const GgufValue& v, size_t at);
    void check_no_overlap();
    void read_tensor_info(uint64_t i, std::vector<size_t>& name_at);
    void check_tensor_shape(GgufTensor& t, const size_t* ne_at, size_t type_at);
    void bind_tensor_data(GgufTensor& t);
};

void GgufParser::bad(uint64_t at, const std::string& problem) const {
    std::string field = field_;
    for (uint64_t i : idx_) field += strfmt("[%" PRIu64 "]", i);
    fail("%s: %s at byte %" PRIu64 ": %s", f_.path_.c_str(), field.c_str(), at, problem.c_str());
}

const uint8_t* GgufParser::take(size_t n, const char* what) {
    if (n > size_ - pos_)
        bad(pos_, strfmt("truncated: %s needs %zu bytes, only %zu left (file size %zu)", what, n, size_ - pos_, size_));
    const uint8_t* r = p_ + pos_;
    pos_ += n;
    return r;
}

std::string GgufParser::read_string(uint64_t max_len, const char* what) {
    size_t at = pos_;
    uint64_t len = read<uint64_t>(what);
    if (len > max_len)
        bad(at, strfmt("%s length %" PRIu64 " exceeds the limit of %" PRIu64 " bytes", what, len, max_len));
    if (len > size_ - pos_)
        bad(at, strfmt("%s length %" PRIu64 " extends past end of file (%zu bytes left, file size %zu)", what, len,
                       size_ - pos_, size_));
    const uint8_t* s = take((size_t)len, what);
    return std::string((const char*)s, (size_t)len);
}

GgufValueType GgufParser::read_value_type(const char* what) {
    size_t at = pos_;
    uint32_t t = read<uint32_t>(what);
    if (t > (uint32_t)GgufValueType::FLOAT64) bad(at, strfmt("unknown value type %" PRIu32, t));
    return (GgufValueType)t;
}

void GgufParser::read_value(GgufValue& v, GgufValueType t, int depth) {
    size_t at = pos_;
    switch (t) {
        case GgufValueType::UINT8: v = GgufValue::make_uint(t, read<uint8_t>("uint8")); break;
        case GgufValueType::UINT16: v = GgufValue::make_uint(t, read<uint16_t>("uint16")); break;
        case GgufValueType::UINT32: v = GgufValue::make_uint(t, read<uint32_t>("uint32")); break;
        case GgufValueType::UINT64: v = GgufValue::make_uint(t, read<uint64_t>("uint64")); break;
        case GgufValueType::INT8: v = GgufValue::make_int(t, read<int8_t>("int8")); break;
        case GgufValueType::INT16: v = GgufValue::make_int(t, read<int16_t>("int16")); break;
        case GgufValueType::INT32: v = GgufValue::make_int(t, read<int32_t>("int32")); break;
        case GgufValueType::INT64: v = GgufValue::make_int(t, read<int64_t>("int64")); break;
        case GgufValueType::FLOAT32: v = GgufValue::make_float(t, read<float>("float32")); break;
        case GgufValueType::FLOAT64: v = GgufValue::make_float(t, read<double>("float64")); break;
        case GgufValueType::BOOL: {
            uint8_t b = read<uint8_t>("bool");
            if (b > 1) bad(at, strfmt("bool value %u, expected 0 or 1", (unsigned)b));
            v = GgufValue::make_bool(b != 0);
            break;
        }
        case GgufValueType::STRING:
            v.type = t;
            v.str = read_string(kMaxStringLen, "string");
            break;
        case GgufValueType::ARRAY: read_array(v, depth + 1); break;
    }
}

void GgufParser::read_array(GgufValue& v, int depth) {
    if (depth > kMaxArrayDepth) bad(pos_, strfmt("arrays nested more than %d deep", kMaxArrayDepth));
    GgufValueType et = read_value_type("array element type");
    size_t at = pos_;
    uint64_t n = read<uint64_t>("array count");
    size_t min = min_value_bytes(et);
    if (n > (size_ - pos_) / min)
        bad(at, strfmt("array count %" PRIu64 " of %s needs at least %zu bytes each, only %zu bytes left", n,
                       gguf_value_type_name(et), min, size_ - pos_));
    if (n > kMaxMetadataValues - n_values_)
        bad(at, strfmt("array count %" PRIu64 " brings the metadata past %" PRIu64 " array elements", n,
                       kMaxMetadataValues));
    n_values_ += n;
    v.type = GgufValueType::ARRAY;
    v.arr_type = et;
    v.arr.resize((size_t)n);
    idx_.push_back(0);
    for (uint64_t i = 0; i < n; i++) {
        idx_.back() = i;
        GgufValue& e = v.arr[(size_t)i];
        if (et == GgufValueType::ARRAY) {
            read_array(e, depth + 1);
        } else {
            read_value(e, et, depth);
        }
    }
    idx_.pop_back();
}

void GgufParser::read_header(uint64_t* n_tensors, uint64_t* n_kv) {
    field_ = "magic";
    const uint8_t* m = take(4, "magic");
    if (std::memcmp(m, "GGUF", 4) != 0)
        bad(0, strfmt("bad magic %02x %02x %02x %02x, expected \"GGUF\" (47 47 55 46)", m[0], m[1], m[2], m[3]));
    field_ = "version";
    uint32_t version = read<uint32_t>("version");
    if (version == 1) bad(4, "GGUF version 1 is not supported (only 2 and 3)");
    if (version != 2 && version != 3) {
        if ((version & 0xffff) == 0 && version != 0)
            bad(4, strfmt("version 0x%08" PRIx32 " looks like a big-endian file, which is not supported", version));
        bad(4, strfmt("unsupported version %" PRIu32 " (only 2 and 3)", version));
    }
    f_.version_ = version;
    field_ = "tensor_count";
    *n_tensors = read<uint64_t>("tensor_count");
    field_ = "metadata_kv_count";
    *n_kv = read<uint64_t>("metadata_kv_count");
    // Bounds the reservations below; a truncated file or a corrupt count ends here.
    size_t left = size_ - pos_;
    field_ = "tensor_count";
    if (*n_tensors > left / kMinTensorInfoBytes)
        bad(8, strfmt("%" PRIu64 " tensor infos cannot fit in the %zu bytes left "
                      "(truncated file or corrupt count)",
                      *n_tensors, left));
    field_ = "metadata_kv_count";
    if (*n_kv > left / kMinKvBytes)
        bad(16, strfmt("%" PRIu64 " metadata entries cannot fit in the %zu bytes left "
                       "(truncated file or corrupt count)",
                       *n_kv, left));
}

void GgufParser::check_alignment(const GgufValue& v, size_t at) {
    if (v.type != GgufValueType::UINT32)
        bad(at, strfmt("has type %s, expected uint32", gguf_value_type_desc(v).c_str()));
    if (v.u64 == 0 || (v.u64 & (v.u64 - 1)) != 0)
        bad(at, strfmt("alignment %" PRIu64 " is not a nonzero power of two", v.u64));
    f_.alignment_ = v.u64;
}

void GgufParser::read_kv(uint64_t i, std::vector<size_t>& key_at) {
    size_t at = pos_;
    field_ = strfmt("metadata key #%" PRIu64, i);
    std::string key = read_string(kMaxKeyLen, "key");
    if (key.empty()) bad(at, "empty key");
    field_ = "metadata key '" + printable(key) + "'";
    auto [it, inserted] = f_.kv_index_.emplace(key, f_.kv_.size());
    if (!inserted) bad(at, strfmt("duplicate key (first defined at byte %zu)", key_at[it->second]));
    key_at.push_back(at);
    GgufValueType t = read_value_type("value type");
    size_t value_at = pos_;
    GgufValue v;
    read_value(v, t, 0);
    if (key == "general.alignment") check_alignment(v, value_at);
    f_.kv_.emplace_back(std::move(key), std::move(v));
}

// Shape rules: every ne > 0, ne[0] a whole number of blocks, element and byte counts that fit.
void GgufParser::check_tensor_shape(GgufTensor& t, const size_t* ne_at, size_t type_at) {
    GgmlTypeInfo info = ggml_type_info(t.type);
    int64_t n = 1;
    for (int d = 0; d < t.n_dims; d++) {
        if (t.ne[d] <= 0) bad(ne_at[d], strfmt("ne[%d] = %" PRId64 ", expected a positive size", d, t.ne[d]));
        if (__builtin_mul_overflow(n, t.ne[d], &n))
            bad(ne_at[d], strfmt("shape overflows: ne[%d] = %" PRId64 " makes more than 2^63 elements", d, t.ne[d]));
    }
    if (t.ne[0] % info.block_size != 0)
        bad(ne_at[0], strfmt("ne[0] = %" PRId64 " is not a multiple of the block size %" PRId64 " of type %s", t.ne[0],
                             info.block_size, info.name));
    uint64_t bytes = 0;
    uint64_t blocks = (uint64_t)(n / info.block_size);
    if (__builtin_mul_overflow(blocks, (uint64_t)info.type_size, &bytes))
        bad(type_at, strfmt("%" PRId64 " elements of type %s overflow the byte count", n, info.name));
    t.nbytes = (size_t)bytes;
}

void GgufParser::read_tensor_info(uint64_t i, std::vector<size_t>& name_at) {
    size_t at = pos_;
    field_ = strfmt("tensor #%" PRIu64 " name", i);
    GgufTensor t;
    t.name = read_string(kMaxTensorNameLen, "name");
    if (t.name.empty()) bad(at, "empty tensor name");
    std::string label = "tensor '" + printable(t.name) + "'";
    field_ = label + " name";
    auto [it, inserted] = f_.tensor_index_.emplace(t.name, f_.tensors_.size());
    if (!inserted) bad(at, strfmt("duplicate tensor name (first defined at byte %zu)", name_at[it->second]));
    name_at.push_back(at);

    field_ = label + " n_dims";
    size_t dims_at = pos_;
    uint32_t n_dims = read<uint32_t>("n_dims");
    if (n_dims == 0 || n_dims > 4) bad(dims_at, strfmt("n_dims %" PRIu32 ", expected 1 to 4", n_dims));
    t.n_dims = (int)n_dims;
    size_t ne_at[4] = {0, 0, 0, 0};
    for (int d = 0; d < t.n_dims; d++) {
        field_ = label + strfmt(" ne[%d]", d);
        ne_at[d] = pos_;
        t.ne[d] = read<int64_t>("ne");
    }
    field_ = label + " type";
    size_t type_at = pos_;
    uint32_t type_id = read<uint32_t>("type");
    if (ggml_type_info(type_id).name == nullptr) bad(type_at, strfmt("unknown ggml type id %" PRIu32, type_id));
    t.type = (GgmlType)type_id;
    field_ = label + " shape";
    check_tensor_shape(t, ne_at, type_at);

    field_ = label + " offset";
    size_t off_at = pos_;
    t.offset = read<uint64_t>("offset");
    if (t.offset % f_.alignment_ != 0)
        bad(off_at, strfmt("offset %" PRIu64 " is not a multiple of the alignment %" PRIu64, t.offset, f_.alignment_));
    f_.tensors_.push_back(std::move(t));
}

void GgufParser::bind_tensor_data(GgufTensor& t) {
    field_ = "tensor '" + printable(t.name) + "' data";
    uint64_t start = 0;
    uint64_t end = 0;
    if (__builtin_add_overflow(f_.data_offset_, t.offset, &start) ||
        __builtin_add_overflow(start, (uint64_t)t.nbytes, &end))
        bad(f_.data_offset_, strfmt("offset %" PRIu64 " + %zu bytes overflows", t.offset, t.nbytes));
    if (end > size_)
        bad(start, strfmt("range [%" PRIu64 ", %" PRIu64 ") extends past end of file (size %zu)", start, end, size_));
    t.data = p_ + start;
}

void GgufParser::run() {
    uint64_t n_tensors = 0;
    uint64_t n_kv = 0;
    read_header(&n_tensors, &n_kv);
    f_.alignment_ = kDefaultAlignment;
    std::vector<size_t> key_at;
    f_.kv_.reserve((size_t)n_kv);
    for (uint64_t i = 0; i < n_kv; i++) read_kv(i, key_at);
    std::vector<size_t> name_at;
    f_.tensors_.reserve((size_t)n_tensors);
    for (uint64_t i = 0; i < n_tensors; i++) read_tensor_info(i, name_at);
    // The data section starts at the next multiple of the alignment; a file without tensors may
    // end before it.
    uint64_t a = f_.alignment_;
    f_.data_offset_ = ((uint64_t)pos_ + a - 1) / a * a;
    for (GgufTensor& t : f_.tensors_) bind_tensor_data(t);
    check_no_overlap();
}

// Two tensors sharing bytes would alias each other's weights (a crafted file, never a writer's output).
void GgufParser::check_no_overlap() {
    std::vector<const GgufTensor*> by_start;
    for (const GgufTensor& t : f_.tensors_)
        if (t.nbytes > 0) by_start.push_back(&t);
    std::sort(by_start.begin(), by_start.end(),
              [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_start.size(); i++) {
        const GgufTensor& a = *by_start[i - 1];
        const GgufTensor& b = *by_start[i];
        if (a.offset + a.nbytes > b.offset) {
            field_ = "tensor '" + printable(b.name) + "' data";
            bad(f_.data_offset_ + b.offset,
                strfmt("range [%" PRIu64 ", %" PRIu64 ") overlaps tensor '%s' at [%" PRIu64 ", %" PRIu64 ")", b.offset,
                       b.offset + b.nbytes, printable(a.name).c_str(), a.offset, a.offset + a.nbytes));
        }
    }
}

GgufFile GgufFile::parse(const uint8_t* data, size_t size, const std::string& name) {
    GgufFile f;
    f.path_ = name;
    f.base_ = data;
    f.size_ = size;
    GgufParser(f, data, size).run();
    return f;
}

GgufFile GgufFile::open(const std::string& path) {
    auto map = std::make_shared<MappedFile>(path);
    GgufFile f = parse(map->data(), map->size(), path);
    f.map_ = std::move(map);
    return f;
}

}  // namespace bee
