// gguf/gguf_value: metadata values (type names, builders) and GgufFile's lookups and typed getters.
#include <cinttypes>
#include <climits>

#include "base/error.h"
#include "gguf/gguf.h"

namespace bee {

const char* gguf_value_type_name(GgufValueType t) {
    switch (t) {
        case GgufValueType::UINT8: return "uint8";
        case GgufValueType::INT8: return "int8";
        case GgufValueType::UINT16: return "uint16";
        case GgufValueType::INT16: return "int16";
        case GgufValueType::UINT32: return "uint32";
        case GgufValueType::INT32: return "int32";
        case GgufValueType::FLOAT32: return "float32";
        case GgufValueType::BOOL: return "bool";
        case GgufValueType::STRING: return "string";
        case GgufValueType::ARRAY: return "array";
        case GgufValueType::UINT64: return "uint64";
        case GgufValueType::INT64: return "int64";
        case GgufValueType::FLOAT64: return "float64";
    }
    return "unknown";
}

std::string gguf_value_type_desc(const GgufValue& v) {
    if (v.type != GgufValueType::ARRAY) return gguf_value_type_name(v.type);
    return std::string("array of ") + gguf_value_type_name(v.arr_type);
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufValueType::UINT8:
        case GgufValueType::INT8:
        case GgufValueType::UINT16:
        case GgufValueType::INT16:
        case GgufValueType::UINT32:
        case GgufValueType::INT32:
        case GgufValueType::UINT64:
        case GgufValueType::INT64: return true;
        default: return false;
    }
}

GgufValue GgufValue::make_uint(GgufValueType t, uint64_t v) {
    GgufValue r;
    r.type = t;
    r.u64 = v;
    r.i64 = v <= (uint64_t)INT64_MAX ? (int64_t)v : 0;
    return r;
}

GgufValue GgufValue::make_int(GgufValueType t, int64_t v) {
    GgufValue r;
    r.type = t;
    r.i64 = v;
    r.u64 = v >= 0 ? (uint64_t)v : 0;
    return r;
}

GgufValue GgufValue::make_float(GgufValueType t, double v) {
    GgufValue r;
    r.type = t;
    r.f64 = v;
    return r;
}

GgufValue GgufValue::make_bool(bool v) {
    GgufValue r;
    r.type = GgufValueType::BOOL;
    r.u64 = v ? 1 : 0;
    return r;
}

GgufValue GgufValue::make_str(std::string v) {
    GgufValue r;
    r.type = GgufValueType::STRING;
    r.str = std::move(v);
    return r;
}

GgufValue GgufValue::make_array(GgufValueType elem, std::vector<GgufValue> elems) {
    GgufValue r;
    r.type = GgufValueType::ARRAY;
    r.arr_type = elem;
    r.arr = std::move(elems);
    return r;
}

namespace {

bool is_signed_type(GgufValueType t) {
    return t == GgufValueType::INT8 || t == GgufValueType::INT16 || t == GgufValueType::INT32 ||
           t == GgufValueType::INT64;
}

// The integer value as int64, or false if it is an unsigned value above INT64_MAX.
bool integer_fits(const GgufValue& v, int64_t* out) {
    if (is_signed_type(v.type)) {
        *out = v.i64;
        return true;
    }
    if (v.u64 > (uint64_t)INT64_MAX) return false;
    *out = (int64_t)v.u64;
    return true;
}

}  // namespace

const GgufValue* GgufFile::find(const std::string& key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

void GgufFile::set_metadata(const std::string& key, GgufValue value) {
    auto [it, inserted] = kv_index_.emplace(key, kv_.size());
    if (inserted) {
        kv_.emplace_back(key, std::move(value));
    } else {
        kv_[it->second].second = std::move(value);
    }
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

// Lookup for the getters: the value, or an Error naming the file and key.
static const GgufValue& need_key(const GgufFile& f, const std::string& key) {
    const GgufValue* v = f.find(key);
    if (!v) fail("%s: metadata key '%s': missing", f.path().c_str(), key.c_str());
    return *v;
}

[[noreturn]] static void wrong_type(const GgufFile& f, const std::string& key, const GgufValue& v,
                                    const char* expected) {
    fail("%s: metadata key '%s': has type %s, expected %s", f.path().c_str(), key.c_str(),
         gguf_value_type_desc(v).c_str(), expected);
}

static int64_t as_int(const GgufFile& f, const std::string& key, const GgufValue& v) {
    int64_t r = 0;
    if (!v.is_integer()) wrong_type(f, key, v, "integer");
    if (!integer_fits(v, &r))
        fail("%s: metadata key '%s': value %" PRIu64 " does not fit int64", f.path().c_str(), key.c_str(), v.u64);
    return r;
}

static double as_float(const GgufFile& f, const std::string& key, const GgufValue& v) {
    if (v.is_float()) return v.f64;
    if (!v.is_integer()) wrong_type(f, key, v, "float");
    return is_signed_type(v.type) ? (double)v.i64 : (double)v.u64;
}

std::string GgufFile::get_str(const std::string& key) const {
    const GgufValue& v = need_key(*this, key);
    if (v.type != GgufValueType::STRING) wrong_type(*this, key, v, "string");
    return v.str;
}

std::string GgufFile::get_str(const std::string& key, const std::string& def) const {
    return has(key) ? get_str(key) : def;
}

int64_t GgufFile::get_int(const std::string& key) const { return as_int(*this, key, need_key(*this, key)); }

int64_t GgufFile::get_int(const std::string& key, int64_t def) const { return has(key) ? get_int(key) : def; }

double GgufFile::get_float(const std::string& key) const { return as_float(*this, key, need_key(*this, key)); }

double GgufFile::get_float(const std::string& key, double def) const { return has(key) ? get_float(key) : def; }

bool GgufFile::get_bool(const std::string& key, bool def) const {
    const GgufValue* v = find(key);
    if (!v) return def;
    if (v->type != GgufValueType::BOOL) wrong_type(*this, key, *v, "bool");
    return v->u64 != 0;
}

std::vector<std::string> GgufFile::get_str_array(const std::string& key) const {
    const GgufValue& v = need_key(*this, key);
    if (v.type != GgufValueType::ARRAY || v.arr_type != GgufValueType::STRING)
        wrong_type(*this, key, v, "array of string");
    std::vector<std::string> out;
    out.reserve(v.arr.size());
    for (const GgufValue& e : v.arr) out.push_back(e.str);
    return out;
}

std::vector<float> GgufFile::get_float_array(const std::string& key) const {
    const GgufValue& v = need_key(*this, key);
    GgufValue elem;
    elem.type = v.arr_type;
    if (v.type != GgufValueType::ARRAY || !(elem.is_float() || elem.is_integer()))
        wrong_type(*this, key, v, "array of float or integer");
    std::vector<float> out;
    out.reserve(v.arr.size());
    for (const GgufValue& e : v.arr) out.push_back((float)as_float(*this, key, e));
    return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
    const GgufValue& v = need_key(*this, key);
    GgufValue elem;
    elem.type = v.arr_type;
    if (v.type != GgufValueType::ARRAY || !elem.is_integer()) wrong_type(*this, key, v, "array of integer");
    std::vector<int64_t> out;
    out.reserve(v.arr.size());
    for (const GgufValue& e : v.arr) out.push_back(as_int(*this, key, e));
    return out;
}

}  // namespace bee
