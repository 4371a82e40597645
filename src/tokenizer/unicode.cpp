// tokenizer/unicode: UTF-8 helpers (RFC 3629) and the GPT-2 bytes_to_unicode table.
#include "tokenizer/unicode.h"

#include <array>

namespace bee {

size_t utf8_lead_len(uint8_t lead) {
    static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLen[lead >> 4];
}

int utf8_decode(const char* s, size_t n, uint32_t* cp, size_t* bad) {
    if (n == 0) return -1;
    const auto* u = reinterpret_cast<const uint8_t*>(s);
    const uint8_t b0 = u[0];
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    int len;
    uint32_t v;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629 table)
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2, v = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3, v = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4, v = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;  // <= U+10FFFF
    } else {
        if (bad) *bad = 1;
        return 0;
    }
    for (int i = 1; i < len; ++i) {
        if ((size_t)i >= n) return -1;
        const uint8_t b = u[i];
        const uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            if (bad) *bad = (size_t)i;
            return 0;
        }
        v = (v << 6) | (b & 0x3F);
    }
    *cp = v;
    return len;
}

void utf8_append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += (char)cp;
    } else if (cp < 0x800) {
        out += (char)(0xC0 | (cp >> 6));
        out += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += (char)(0xE0 | (cp >> 12));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    } else {
        out += (char)(0xF0 | (cp >> 18));
        out += (char)(0x80 | ((cp >> 12) & 0x3F));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    }
}

bool utf8_is_valid(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        if ((uint8_t)s[i] < 0x80) {
            ++i;
            continue;
        }
        uint32_t cp;
        const int len = utf8_decode(s.data() + i, s.size() - i, &cp);
        if (len <= 0) return false;
        i += (size_t)len;
    }
    return true;
}

std::string utf8_sanitize(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        uint32_t cp;
        size_t bad = 0;
        const int len = utf8_decode(s.data() + i, s.size() - i, &cp, &bad);
        if (len > 0) {
            out.append(s.data() + i, (size_t)len);
            i += (size_t)len;
        } else {
            utf8_append(out, kReplacementChar);
            i += len < 0 ? s.size() - i : bad;
        }
    }
    return out;
}

namespace {

struct Gpt2Tables {
    std::array<std::string, 256> byte_to_utf8;
    std::array<int16_t, 512> cp_to_byte;  // every image lies below U+0200

    Gpt2Tables() {
        cp_to_byte.fill(-1);
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const uint32_t cp = printable ? (uint32_t)b : (uint32_t)(256 + n++);
            utf8_append(byte_to_utf8[b], cp);
            cp_to_byte[cp] = (int16_t)b;
        }
    }
};

const Gpt2Tables& gpt2_tables() {
    static const Gpt2Tables tables;
    return tables;
}

}  // namespace

const std::string& gpt2_byte_to_utf8(uint8_t byte) { return gpt2_tables().byte_to_utf8[byte]; }

int gpt2_cp_to_byte(uint32_t cp) { return cp < 512 ? gpt2_tables().cp_to_byte[cp] : -1; }

void gpt2_encode(std::string_view raw, std::string& out) {
    const Gpt2Tables& t = gpt2_tables();
    for (char c : raw) out += t.byte_to_utf8[(uint8_t)c];
}

}  // namespace bee
