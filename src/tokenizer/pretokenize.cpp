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
constexpr const char* kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
// Mistral Tekken: upper-then-lower letter runs, written with lookaheads instead of \p{Lu}/\p{Ll}.
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|)"
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)"
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
int regex_match(const pcre2_code* code, const char* subj, size_t len, size_t pos, uint32_t opts,
                pcre2_match_data* md) {
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
