// app/cmd_gguf: `bee gguf info FILE`, a readable dump of a GGUF file's header, metadata and tensor table;
// `bee gguf synth ...` (app/cmd_synth.cpp) writes a synthetic model.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>

#include "app/commands.h"
#include "base/error.h"
#include "gguf/gguf.h"

namespace bee {

namespace {

constexpr size_t kMaxArrayShown = 8;     // array elements printed before "..."
constexpr size_t kMaxStringShown = 200;  // string bytes printed before "..."
constexpr size_t kMaxNameShown = 120;    // key and tensor name bytes printed

void print_usage(FILE* out) {
    fprintf(out,
            "usage: bee gguf info FILE\n"
            "       bee gguf synth OUT.gguf --vocab FILE [--shape qwen2.5-0.5b] [--type f16] [--seed N]\n"
            "  Prints the GGUF version, alignment, every metadata key with its type and value (long\n"
            "  arrays and strings abbreviated), the tensor table and totals by type.\n");
}

// `s` made printable: quotes, backslashes and control bytes escaped; past `max` bytes it is cut at a
// UTF-8 boundary and the full length noted. `quoted` puts the text in double quotes.
std::string printable(const std::string& s, size_t max, bool quoted) {
    size_t n = s.size();
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
    }
    std::string out = quoted ? "\"" : "";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') out += strfmt("\\%c", c);
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) out += strfmt("\\x%02x", c);
        else out += (char)c;
    }
    if (quoted) out += "\"";
    if (n < s.size()) out += strfmt("...(%zu bytes)", s.size());
    return out;
}

std::string name_text(const std::string& s) { return printable(s, kMaxNameShown, false); }

std::string type_label(const GgufValue& v) {
    if (v.type != GgufValueType::ARRAY) return gguf_value_type_name(v.type);
    return strfmt("array[%s]", gguf_value_type_name(v.arr_type));
}

std::string value_text(const GgufValue& v) {
    switch (v.type) {
        case GgufValueType::UINT8:
        case GgufValueType::UINT16:
        case GgufValueType::UINT32:
        case GgufValueType::UINT64: return strfmt("%" PRIu64, v.u64);
        case GgufValueType::INT8:
        case GgufValueType::INT16:
        case GgufValueType::INT32:
        case GgufValueType::INT64: return strfmt("%" PRId64, v.i64);
        case GgufValueType::FLOAT32: return strfmt("%.7g", v.f64);
        case GgufValueType::FLOAT64: return strfmt("%.15g", v.f64);
        case GgufValueType::BOOL: return v.u64 ? "true" : "false";
        case GgufValueType::STRING: return printable(v.str, kMaxStringShown, true);
        case GgufValueType::ARRAY: break;
    }
    std::string out = "[";
    for (size_t i = 0; i < v.arr.size() && i < kMaxArrayShown; i++) {
        if (i > 0) out += ", ";
        out += value_text(v.arr[i]);
    }
    if (v.arr.size() > kMaxArrayShown) out += strfmt(", ... (%zu more)", v.arr.size() - kMaxArrayShown);
    return out + "]";
}

std::string shape_text(const GgufTensor& t) {
    std::string out = "[";
    for (int d = 0; d < t.n_dims; d++) out += strfmt(d ? ", %" PRId64 : "%" PRId64, t.ne[d]);
    return out + "]";
}

std::string size_text(uint64_t bytes) {
    return strfmt("%" PRIu64 " bytes (%.2f MiB)", bytes, (double)bytes / (1024.0 * 1024.0));
}

void print_metadata(const GgufFile& f) {
    size_t key_w = 3;
    for (const auto& [k, v] : f.metadata()) key_w = std::max(key_w, std::min<size_t>(name_text(k).size(), 60));
    printf("\nmetadata (%zu keys):\n", f.metadata().size());
    printf("  %-*s  %-15s  %s\n", (int)key_w, "KEY", "TYPE", "VALUE");
    for (const auto& [k, v] : f.metadata()) {
        std::string value = value_text(v);
        if (v.type == GgufValueType::ARRAY) value = strfmt("(%zu) ", v.arr.size()) + value;
        printf("  %-*s  %-15s  %s\n", (int)key_w, name_text(k).c_str(), type_label(v).c_str(), value.c_str());
    }
}

void print_tensors(const GgufFile& f) {
    size_t name_w = 4;
    for (const GgufTensor& t : f.tensors()) name_w = std::max(name_w, std::min<size_t>(name_text(t.name).size(), 60));
    printf("\ntensors (%zu):\n", f.tensors().size());
    printf("  %5s  %-*s  %-8s  %-24s  %14s  %12s\n", "#", (int)name_w, "NAME", "TYPE", "SHAPE", "OFFSET", "BYTES");
    struct TypeTotal {
        size_t count = 0;
        uint64_t bytes = 0;
    };
    std::map<uint32_t, TypeTotal> by_type;
    uint64_t total_bytes = 0;
    uint64_t total_elements = 0;
    for (size_t i = 0; i < f.tensors().size(); i++) {
        const GgufTensor& t = f.tensors()[i];
        printf("  %5zu  %-*s  %-8s  %-24s  %14" PRIu64 "  %12zu\n", i, (int)name_w, name_text(t.name).c_str(),
               ggml_type_name(t.type), shape_text(t).c_str(), t.offset, t.nbytes);
        TypeTotal& tt = by_type[(uint32_t)t.type];
        tt.count++;
        tt.bytes += t.nbytes;
        total_bytes += t.nbytes;
        total_elements += (uint64_t)t.n_elements();
    }
    printf("\ntotals: %zu tensors, %" PRIu64 " elements, %s\n", f.tensors().size(), total_elements,
           size_text(total_bytes).c_str());
    for (const auto& [id, tt] : by_type)
        printf("  %-8s  %5zu tensors  %s\n", ggml_type_info(id).name, tt.count, size_text(tt.bytes).c_str());
}

void print_info(const GgufFile& f) {
    printf("file:              %s\n", f.path().c_str());
    printf("file size:         %s\n", size_text(f.file_size()).c_str());
    printf("version:           %" PRIu32 "\n", f.version());
    printf("alignment:         %" PRIu64 "\n", f.alignment());
    printf("tensor data at:    byte %" PRIu64 "\n", f.data_offset());
    print_metadata(f);
    print_tensors(f);
}

}  // namespace

// argv holds the arguments after `bee gguf` ("info", FILE); a leading "gguf" (the subcommand name
// itself, main()-style) is skipped, so either calling convention works.
int cmd_gguf(int argc, char** argv) {
    if (argc >= 1 && !strcmp(argv[0], "gguf")) {
        argc--;
        argv++;
    }
    auto is_help = [](const char* a) { return !strcmp(a, "-h") || !strcmp(a, "--help"); };
    if ((argc >= 1 && is_help(argv[0])) || (argc >= 2 && is_help(argv[1]))) {
        print_usage(stdout);
        return 0;
    }
    if (argc >= 1 && !strcmp(argv[0], "synth")) return cmd_gguf_synth(argc - 1, argv + 1);
    if (argc < 1 || strcmp(argv[0], "info") != 0) {
        if (argc >= 1) fprintf(stderr, "error: unknown gguf action '%s'\n", argv[0]);
        print_usage(stderr);
        return 2;
    }
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "error: expected exactly one FILE after 'info'\n");
        print_usage(stderr);
        return 2;
    }
    try {
        GgufFile f = GgufFile::open(argv[1]);
        print_info(f);
    } catch (const std::exception& e) {
        fflush(stdout);
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace bee
