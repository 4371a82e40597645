// tokenizer/pretokenize: tokenizer.ggml.pre -> regex sequence table (the Hugging Face pre-tokenizer
// patterns as llama.cpp adapts them) and the PCRE2 splitter that applies them.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include "base/error.h"
#include "tokenizer/unicode.h"

namespace bee {

namespace {

// GPT-2's pattern; the trailing `|\s+` alternative is left out as in llama.cpp (the splitter keeps
// unmatched text as its own piece, which gives the same pieces).
constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Llama 3: (?i:'s|...) spelled out with character classes.
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}|)"
    R"( ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kBailing = R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
                                 R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
// Mistral Tekken: upper-then-lower letter runs, written with lookaheads instead of \p{Lu}/\p{Ll}.
constexpr const char* kTekken = R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|)"
                                R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|)"
                                R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4o = R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)"
                               R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
                               R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)"
                               R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
                               R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kDeepseek3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|)"
    R"( ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// CJK ideographs U+4E00..U+9FA5, U+0800..U+4E00, Hangul U+AC00..U+D7FF (deepseek-coder).
constexpr const char* kCjkHangul = R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
// Everything up to whitespace or . , ! ? … 。 ， 、 । ۔ ، (and the parentheses / bar the original has).
constexpr const char* kPoro = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)";

// Contractions, case-insensitive, spelled out (PCRE2 and llama.cpp agree on this form).
#define BEE_CONTRACTIONS R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
constexpr const char* kQwen35 = BEE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Llama 3 with whitespace runs cut into power-of-two lengths.
constexpr const char* kJais2 = BEE_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|)"
    R"(\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|)"
    R"(\s{1,2}(?!\S)|\s{1})";
constexpr const char* kMiniCpm5 =
    BEE_CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kExaoneMoe =
    BEE_CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|)"
                     R"(\s*[\r\n]|\s+(?!\S)|\s+)";
// Upper-then-lower letter runs with the Unicode case classes (tiny_aya / youtu's tokenizer.json).
#define BEE_CASED_WORDS                                                                                \
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" BEE_CONTRACTIONS \
    R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" BEE_CONTRACTIONS "?"
constexpr const char* kTinyAya = BEE_CASED_WORDS R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kYoutu = BEE_CASED_WORDS R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kYoutuCjk =
    R"([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+|)"
    R"([\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}\x{FF1A}\x{FF1B}\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+|)"
    R"([\x{3105}-\x{312F}]+|[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)";
// Kimi K2: cased words that exclude Han ideographs (the original's class intersection as a lookahead).
#define BEE_NOT_HAN_UPPER R"((?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]))"
#define BEE_NOT_HAN_LOWER R"((?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}]))"
constexpr const char* kKimiK2 =
    R"(\p{Han}+|[^\r\n\p{L}\p{N}]?)" BEE_NOT_HAN_UPPER "*" BEE_NOT_HAN_LOWER "+" BEE_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?)" BEE_NOT_HAN_UPPER "+" BEE_NOT_HAN_LOWER "*" BEE_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Granite multilingual embeddings: the GPT-4o lookaheads with combining marks counted as letters.
constexpr const char* kGraniteMulti =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+)" BEE_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*)" BEE_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Digit runs cut into groups of three from the right (1234567 -> 1 234 567): AFMoE, tiny_aya.
constexpr const char* kDigitsBy3 = R"(\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N})))";
// AFMoE's CJK and Southeast Asian scripts, as llama.cpp spells the ranges.
constexpr const char* kAfmoeCjk =
    R"([\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{8C48}-\x{FAFF}\x{3040}-\x{309F}\x{30A0}-\x{30FF}\x{FF65}-\x{FF9F})"
    R"(\x{2F00}-\x{2FDF}\x{0E40}-\x{0E7F}\x{0E80}-\x{0EFF}\x{1780}-\x{17FF}\x{1000}-\x{109F}\x{AA60}-\x{AA7F})"
    R"(\x{A9E0}-\x{A9FF}\x{AC00}-\x{D7AF}\x{1100}-\x{11FF}]+)";
// DeepSeek LLM: letters of the cased scripts (Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, ...).
constexpr const char* kDeepseekLlmLetters =
    R"(\s?[A-Za-z\x{00B5}\x{00C0}-\x{00D6}\x{00D8}-\x{00F6}\x{00F8}-\x{01BA}\x{01BC}-\x{01BF}\x{01C4}-\x{0293})"
    R"(\x{0295}-\x{02AF}\x{0370}-\x{0373}\x{0376}\x{0377}\x{037B}-\x{037D}\x{037F}\x{0386}\x{0388}-\x{038A}\x{038C})"
    R"(\x{038E}-\x{03A1}\x{03A3}-\x{03F5}\x{03F7}-\x{0481}\x{048A}-\x{052F}\x{0531}-\x{0556}\x{10A0}-\x{10C5})"
    R"(\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77})"
    R"(\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59})"
    R"(\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
    R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139})"
    R"(\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE})"
    R"(\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E})"
    R"(\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
    R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)";
constexpr const char* kDeepseekLlmPunct =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";
constexpr const char* kNewlineRuns = R"([^\n]+|[\n]+)";
constexpr const char* kRawUtf8Bpe =
    "SPM-style BPE (raw UTF-8 symbols, spaces as U+2581, <0xXX> byte tokens) is not implemented in Bee";

// clang-format off
const std::vector<PreTokenizerSpec>& pre_tokenizer_table() {
    static const std::vector<PreTokenizerSpec> table = {
        {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
         {kLlama3}, /*ignore_merges=*/true, /*add_bos=*/true},
        {{"dbrx", "smaug-bpe"}, {kLlama3}},
        {{"glm4", "chatglm-bpe"}, {kLlama3}, false, false, /*no_bos=*/true},
        {{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
         {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)", kDeepseek3Main}},
        {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjkHangul, R"(\p{N})"}},
        {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, {R"(\p{N})", kGpt2}},
        {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "gigachat", "a.x-4.0", "mellum",
          "modern-bert", "exaone4", "roberta-bpe", "jina-es", "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de",
          "jina-v2-code"},
         {kGpt2}},
        {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open", "grok-2"},
         {kQwen2}},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {kPoro}},
        {{"viking"}, {kPoro, R"(\p{N})"}},
        {{"tekken"}, {kTekken}, /*ignore_merges=*/true, /*add_bos=*/true},
        {{"gpt-4o", "llama4", "minimax-m2"}, {kGpt4o}},
        {{"seed-coder"}, {kSeedCoder}},
        {{"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}},
        {{"deepseek-llm"}, {R"([\r\n])", kDeepseekLlmLetters, kDeepseekLlmPunct, R"(\s+$)", kCjkHangul, R"(\p{N}+)"}},
        {{"qwen35"}, {kQwen35}},
        {{"jais-2"}, {kJais2}},
        {{"minicpm5"}, {R"(\p{N}{1,3})", kMiniCpm5}, /*ignore_merges=*/true},
        {{"youtu"}, {kYoutuCjk, kYoutu}, /*ignore_merges=*/true},
        {{"exaone-moe"}, {kExaoneMoe}},
        {{"chameleon"},
         {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", R"(\p{N})",
          R"([\p{P}!-/:-@\[-`{-~])", kGpt2}, false, /*add_bos=*/true},
        {{"kanana2", "talkie"}, {kGpt4o}},
        {{"granite-embed-multi-97m"}, {kGraniteMulti}, /*ignore_merges=*/true},
        {{"tiny_aya", "cohere2moe"}, {kDigitsBy3, kTinyAya}},
        {{"superbpe"}, {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}},
        {{"kimi-k2"}, {kKimiK2}},
        {{"afmoe"}, {kDigitsBy3, kAfmoeCjk, kDeepseek3Main}},
        {{"laguna"}, {kNewlineRuns, kQwen2}},
        {{"mellum2"}, {R"(\p{N})", kGpt2}},
        {{"gemma4", "granite-embed-multi-311m", "sarvam-moe", "whitespace"}, {kNewlineRuns}, false, false, false,
         kRawUtf8Bpe},
    };
    return table;
}
// clang-format on

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view name) {
    if (name.empty()) name = "default";
    for (const PreTokenizerSpec& spec : pre_tokenizer_table()) {
        for (const char* n : spec.names) {
            if (name == n) return &spec;
        }
    }
    // Other Jina embedding vocabularies are RoBERTa-style byte-level BPE.
    if (name.substr(0, 5) == "jina-") return find_pre_tokenizer("gpt-2");
    return nullptr;
}

std::string supported_pre_tokenizers() {
    std::string s;
    for (const PreTokenizerSpec& spec : pre_tokenizer_table()) {
        if (spec.unsupported) continue;
        for (const char* n : spec.names) {
            if (!s.empty()) s += ", ";
            s += n;
        }
    }
    return s;
}

struct RegexSplitter::Impl {
    std::vector<pcre2_code*> codes;
    ~Impl() {
        for (pcre2_code* c : codes) pcre2_code_free(c);
    }
};

RegexSplitter::RegexSplitter(const std::vector<const char*>& patterns) : impl_(std::make_unique<Impl>()) {
    for (const char* p : patterns) {
        int err = 0;
        PCRE2_SIZE off = 0;
        pcre2_code* code =
            pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
        if (!code) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof(msg));
            fail("tokenizer: pre-tokenizer regex '%s' does not compile at offset %zu: %s", p, (size_t)off,
                 (const char*)msg);
        }
        impl_->codes.push_back(code);
        pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // note: falls back to the interpreter if JIT is unavailable
    }
}

RegexSplitter::~RegexSplitter() = default;

namespace {

struct MatchDataFree {
    void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataFree>;

// pcre2_match, retried without JIT if the JIT stack (32 KiB by default) runs out.
int regex_match(const pcre2_code* code, const char* subj, size_t len, size_t pos, uint32_t opts, pcre2_match_data* md) {
    int rc = pcre2_match(code, (PCRE2_SPTR)subj, len, pos, opts | PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code, (PCRE2_SPTR)subj, len, pos, opts | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
    }
    return rc;
}

// Appends the pieces of `r` cut by one regex: every match and every stretch between matches.
// An empty match cuts at its position, as std::regex_iterator-based splitting does.
void split_range(const pcre2_code* code, pcre2_match_data* md, std::string_view text, TextRange r,
                 std::vector<TextRange>& out) {
    const char* subj = text.data() + r.start;
    const size_t len = r.len;
    size_t pos = 0, last = 0;
    uint32_t opts = 0;
    auto emit = [&](size_t from, size_t to) {
        if (to > from) out.push_back({r.start + (uint32_t)from, (uint32_t)(to - from)});
    };
    while (pos < len) {
        const int rc = regex_match(code, subj, len, pos, opts, md);
        if (rc == PCRE2_ERROR_NOMATCH) {
            if (opts == 0) break;
            opts = 0;  // no non-empty match where the empty one was: move on one character
            pos += utf8_lead_len((uint8_t)subj[pos]);
            continue;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof(msg));
            fail("tokenizer: pre-tokenizer regex match failed: %s", (const char*)msg);
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t ms = ov[0], me = ov[1];
        emit(last, ms);
        emit(ms, me);
        last = me;
        pos = me;
        opts = me == ms ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
    }
    emit(last, len);
}

}  // namespace

std::vector<TextRange> RegexSplitter::split(std::string_view text) const {
    std::vector<TextRange> cur;
    if (text.empty()) return cur;
    cur.push_back({0, (uint32_t)text.size()});
    std::vector<TextRange> next;
    for (const pcre2_code* code : impl_->codes) {
        MatchData md(pcre2_match_data_create_from_pattern(code, nullptr));
        if (!md) fail("tokenizer: out of memory for regex match data");
        next.clear();
        next.reserve(cur.size() * 2);
        for (const TextRange& r : cur) split_range(code, md.get(), text, r, next);
        cur.swap(next);
    }
    return cur;
}

}  // namespace bee
