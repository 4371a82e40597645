// tokenizer/tokenizer: the Tokenizer over a GGUF vocabulary: special-token partition, then SPM or
// byte-level BPE per plain fragment; token pieces (cached) and decode().
#include "tokenizer/tokenizer.h"

#include <cstdint>

#include "base/error.h"
#include "gguf/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/special.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace bee {

namespace {

// SPM whitespace escape: every " " becomes U+2581 "▁".
std::string escape_spaces(std::string_view s) {
    std::string out;
    out.reserve(s.size() + s.size() / 2);
    for (char c : s) {
        if (c == ' ') {
            out += "\xE2\x96\x81";
        } else {
            out += c;
        }
    }
    return out;
}

std::string unescape_spaces(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s.compare(i, 3, "\xE2\x96\x81") == 0) {
            out += ' ';
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

// GPT-2 byte mapping undone; a code point that is no byte's image is kept as it is.
std::string gpt2_decode(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        uint32_t cp = 0;
        const int len = utf8_decode(s.data() + i, s.size() - i, &cp);
        const int b = len > 0 ? gpt2_cp_to_byte(cp) : -1;
        const size_t n = len > 0 ? (size_t)len : 1;
        if (b >= 0) {
            out += (char)b;
        } else {
            out.append(s, i, n);
        }
        i += n;
    }
    return out;
}

uint8_t hex_byte(const std::string& t) {  // "<0xAB>" -> 0xAB
    return (uint8_t)std::stoul(t.substr(3, 2), nullptr, 16);
}

// The piece of `id` with special = true (llama.cpp's token_to_piece rules per attribute).
std::string piece_of(const Vocab& v, int32_t id) {
    const uint32_t a = v.attr[id];
    const std::string& t = v.text[id];
    if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t;
    if (a & kAttrNormal) return v.type == VocabType::spm ? unescape_spaces(t) : gpt2_decode(t);
    if ((a & kAttrByte) && t.size() == 6 && t.compare(0, 3, "<0x") == 0) return std::string(1, (char)hex_byte(t));
    return "";  // undefined / unused tokens render as nothing
}

class VocabTokenizer final : public Tokenizer {
public:
    explicit VocabTokenizer(Vocab v) : v_(std::move(v)), special_(v_) {
        if (v_.type == VocabType::bpe) bpe_ = std::make_unique<BpeModel>(v_);
        pieces_.resize(v_.text.size());
        for (int32_t id = 0; id < v_.n_vocab(); ++id) pieces_[id] = piece_of(v_, id);
    }

    std::vector<int32_t> encode(const std::string& text, bool add_special, bool parse_special) const override {
        if (text.size() > UINT32_MAX) fail("tokenizer: text of %zu bytes is too long (4 GiB at most)", text.size());
        std::vector<int32_t> out;
        out.reserve(text.size() / 3 + 4);
        if (add_special && v_.add_bos) out.push_back(v_.bos);
        bool prev_special = true;  // SPM: a space prefix goes at the start and after each special token
        for (const Fragment& fr : special_.partition(v_, text, parse_special)) {
            if (fr.token >= 0) {
                out.push_back(fr.token);
                prev_special = true;
                continue;
            }
            const std::string_view raw(text.data() + fr.start, fr.len);
            if (bpe_) {
                bpe_->tokenize(v_, raw, out);
            } else {
                const std::string s =
                    escape_spaces(v_.add_space_prefix && prev_special ? " " + std::string(raw) : std::string(raw));
                spm_tokenize(v_, s, out);
            }
            prev_special = false;
        }
        if (add_special && v_.add_eos) out.push_back(v_.eos);
        return out;
    }

    std::string token_to_piece(int32_t id, bool special) const override {
        check(id);
        if (!special && (v_.attr[id] & (kAttrUnknown | kAttrControl))) return "";
        return pieces_[id];
    }

    int32_t n_vocab() const override { return v_.n_vocab(); }
    int32_t bos() const override { return v_.bos; }
    int32_t eos() const override { return v_.eos; }
    int32_t eot() const override { return v_.eot; }
    Fim fim() const override { return {v_.fim_pre, v_.fim_suf, v_.fim_mid, v_.fim_pad, v_.fim_rep, v_.fim_sep}; }
    bool add_bos() const override { return v_.add_bos; }
    bool add_eos() const override { return v_.add_eos; }
    bool add_space_prefix() const override { return v_.add_space_prefix; }
    bool is_eog(int32_t id) const override { return id >= 0 && id < v_.n_vocab() && v_.is_eog[id]; }
    int32_t find_token(std::string_view text) const override { return v_.find(text); }
    const char* model_name() const override { return v_.type == VocabType::spm ? "llama" : "gpt2"; }

    TokenType token_type(int32_t id) const override {
        check(id);
        const uint32_t a = v_.attr[id];
        if (a & kAttrControl) return TokenType::control;
        if (a & kAttrUserDefined) return TokenType::user_defined;
        if (a & kAttrByte) return TokenType::byte;
        if (a & kAttrUnknown) return TokenType::unknown;
        if (a & kAttrUnused) return TokenType::unused;
        if (a & kAttrNormal) return TokenType::normal;
        return TokenType::undefined;
    }

    const std::string& token_text(int32_t id) const override {
        check(id);
        return v_.text[id];
    }

private:
    void check(int32_t id) const {
        if (id < 0 || id >= v_.n_vocab()) fail("tokenizer: token id %d outside the vocabulary [0, %d)", id, n_vocab());
    }

    Vocab v_;
    SpecialMatcher special_;
    std::unique_ptr<BpeModel> bpe_;    // BPE vocabularies only
    std::vector<std::string> pieces_;  // (n_vocab) token_to_piece(id, special = true)
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& f) {
    return std::make_unique<VocabTokenizer>(load_vocab(f));
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool special) const {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        const std::string piece = token_to_piece(ids[i], special);
        if (i == 0 && add_space_prefix() && !piece.empty() && piece[0] == ' ') {
            out.append(piece, 1, std::string::npos);
        } else {
            out += piece;
        }
    }
    return out;
}

}  // namespace bee
