// gguf/ggml_type: the type table (block sizes and bytes per block as GGUF defines them).
#include "gguf/ggml_type.h"

#include <cctype>
#include <cstring>
#include <string>

namespace bee {

struct TypeRow {
    uint32_t id;
    GgmlTypeInfo info;
};

static const TypeRow kTypes[] = {
    {0, {"f32", 1, 4}},
    {1, {"f16", 1, 2}},
    {2, {"q4_0", 32, 18}},
    {3, {"q4_1", 32, 20}},
    {6, {"q5_0", 32, 22}},
    {7, {"q5_1", 32, 24}},
    {8, {"q8_0", 32, 34}},
    {9, {"q8_1", 32, 36}},
    {10, {"q2_k", 256, 84}},
    {11, {"q3_k", 256, 110}},
    {12, {"q4_k", 256, 144}},
    {13, {"q5_k", 256, 176}},
    {14, {"q6_k", 256, 210}},
    {15, {"q8_k", 256, 292}},
    {16, {"iq2_xxs", 256, 66}},
    {17, {"iq2_xs", 256, 74}},
    {18, {"iq3_xxs", 256, 98}},
    {19, {"iq1_s", 256, 50}},
    {20, {"iq4_nl", 32, 18}},
    {21, {"iq3_s", 256, 110}},
    {22, {"iq2_s", 256, 82}},
    {23, {"iq4_xs", 256, 136}},
    {24, {"i8", 1, 1}},
    {25, {"i16", 1, 2}},
    {26, {"i32", 1, 4}},
    {27, {"i64", 1, 8}},
    {28, {"f64", 1, 8}},
    {29, {"iq1_m", 256, 56}},
    {30, {"bf16", 1, 2}},
    {34, {"tq1_0", 256, 54}},
    {35, {"tq2_0", 256, 66}},
    {39, {"mxfp4", 32, 17}},
    // TurboQuant KV types (BeeLlama layout) and Bee's 64-group variants; see quant/blocks.h.
    {42, {"turbo3", 128, 50}},
    {43, {"turbo4", 128, 66}},
    {44, {"turbo2", 128, 34}},
    {45, {"turbo3_tcq", 128, 52}},
    {46, {"turbo2_tcq", 128, 36}},
    {142, {"turbo3_64", 64, 26}},
    {143, {"turbo4_64", 64, 34}},
    {144, {"turbo2_64", 64, 18}},
};

GgmlTypeInfo ggml_type_info(uint32_t id) {
    for (const TypeRow& r : kTypes)
        if (r.id == id) return r.info;
    return {nullptr, 0, 0};
}

bool ggml_type_from_name(const char* name, GgmlType* out) {
    std::string lower(name);
    for (char& c : lower) c = (char)tolower((unsigned char)c);
    for (const TypeRow& r : kTypes) {
        if (lower == r.info.name) {
            *out = (GgmlType)r.id;
            return true;
        }
    }
    return false;
}

}  // namespace bee
