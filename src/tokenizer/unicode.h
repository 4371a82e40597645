// tokenizer/unicode: UTF-8 decoding/encoding helpers and the GPT-2 byte <-> unicode mapping.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bee {

constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of a UTF-8 sequence judged by its lead byte only (1 for stray continuation bytes), as
// llama.cpp's SPM/BPE symbol splitting does. Never 0.
size_t utf8_lead_len(uint8_t lead);

// Strictly decodes one code point at s[0..n) (no overlongs, surrogates or values > U+10FFFF).
// Returns the sequence length, -1 if the bytes are a valid but truncated prefix of a sequence
// (more bytes could make it valid), or 0 if they are invalid; then `*bad` (if given) is the length
// of the maximal invalid subpart that one U+FFFD replaces (Unicode 15, section 3.9, U+FFFD policy).
int utf8_decode(const char* s, size_t n, uint32_t* cp, size_t* bad = nullptr);

void utf8_append(std::string& out, uint32_t cp);

// True if the whole string is strictly valid UTF-8.
bool utf8_is_valid(std::string_view s);

// Copy of `s` with each maximal invalid subpart replaced by U+FFFD (a truncated tail included).
std::string utf8_sanitize(std::string_view s);

// GPT-2 byte-level BPE mapping: each byte 0..255 maps to one printable code point
// (bytes that are printable Latin-1 map to themselves, the rest to U+0100 + n).
const std::string& gpt2_byte_to_utf8(uint8_t byte);
// Inverse of the mapping; -1 if `cp` is not the image of any byte.
int gpt2_cp_to_byte(uint32_t cp);

// Appends the GPT-2 encoding of every byte of `raw` to `out`.
void gpt2_encode(std::string_view raw, std::string& out);

}  // namespace bee
