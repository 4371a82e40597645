// tokenizer/vocab: loads tokenizer.ggml.* into a Vocab, applying llama.cpp's defaults and
// text-based special-token detection (EOT/EOM/FIM/EOG) so ids and flags match llama.cpp.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "base/error.h"
#include "base/log.h"
#include "gguf/gguf.h"
#include "tokenizer/pretokenize.h"

namespace bee {

namespace {

constexpr const char* kKeyModel = "tokenizer.ggml.model";
constexpr const char* kKeyPre = "tokenizer.ggml.pre";
constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
constexpr const char* kKeyScores = "tokenizer.ggml.scores";
constexpr const char* kKeyTypes = "tokenizer.ggml.token_type";
constexpr const char* kKeyMerges = "tokenizer.ggml.merges";

uint32_t attr_from_type(int64_t type) {
    switch (type) {
        case 1: return kAttrNormal;
        case 2: return kAttrUnknown;
        case 3: return kAttrControl;
        case 4: return kAttrUserDefined;
        case 5: return kAttrUnused;
        case 6: return kAttrByte;
        default: return kAttrUndefined;
    }
}

// tokenizer.ggml.model -> vocab type and llama.cpp's per-type defaults.
void read_model_type(const GgufFile& f, Vocab& v) {
    if (!f.has(kKeyModel)) fail("%s: %s: missing (no tokenizer in this file)", f.path().c_str(), kKeyModel);
    v.model = f.get_str(kKeyModel);
    v.pre = f.has(kKeyPre) ? f.get_str(kKeyPre) : "";
    if (v.model == "llama") {
        v.type = VocabType::spm;
        v.bos = 1, v.eos = 2, v.unk = 0;
        v.add_space_prefix = true;
        v.add_bos = true;
    } else if (v.model == "gpt2") {
        v.type = VocabType::bpe;
        v.bos = 11, v.eos = 11;  // llama.cpp's BPE defaults, used only when the file names none
        v.pre_spec = find_pre_tokenizer(v.pre);
        if (!v.pre_spec) {
            fail("%s: %s: unsupported pre-tokenizer '%s' (supported: %s)", f.path().c_str(), kKeyPre, v.pre.c_str(),
                 supported_pre_tokenizers().c_str());
        }
        if (v.pre_spec->unsupported)
            fail("%s: %s '%s' is not supported: %s", f.path().c_str(), kKeyPre, v.pre.c_str(), v.pre_spec->unsupported);
        v.ignore_merges = v.pre_spec->ignore_merges;
        v.add_bos = v.pre_spec->add_bos;
        if (v.pre_spec->no_bos) v.bos = -1;
    } else {
        fail("%s: %s: unsupported tokenizer model '%s' (supported: llama, gpt2)", f.path().c_str(), kKeyModel,
             v.model.c_str());
    }
    v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
}

void read_tokens(const GgufFile& f, Vocab& v) {
    if (!f.has(kKeyTokens)) fail("%s: %s: missing", f.path().c_str(), kKeyTokens);
    v.text = f.get_str_array(kKeyTokens);
    const size_t n = v.text.size();
    if (n == 0) fail("%s: %s: empty vocabulary", f.path().c_str(), kKeyTokens);
    if (n > (size_t)INT32_MAX) fail("%s: %s: %zu tokens is too many", f.path().c_str(), kKeyTokens, n);
    v.score.assign(n, 0.0f);
    if (f.has(kKeyScores)) {
        std::vector<float> s = f.get_float_array(kKeyScores);
        if (s.size() < n) fail("%s: %s: %zu scores for %zu tokens", f.path().c_str(), kKeyScores, s.size(), n);
        std::copy(s.begin(), s.begin() + (ptrdiff_t)n, v.score.begin());
    }
    v.attr.assign(n, kAttrNormal);
    if (f.has(kKeyTypes)) {
        std::vector<int64_t> t = f.get_int_array(kKeyTypes);
        if (t.size() < n) fail("%s: %s: %zu types for %zu tokens", f.path().c_str(), kKeyTypes, t.size(), n);
        for (size_t i = 0; i < n; ++i) v.attr[i] = attr_from_type(t[i]);
    }
    v.token_to_id.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        if (v.text[i].empty()) v.text[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
        auto [it, inserted] = v.token_to_id.emplace(v.text[i], (int32_t)i);
        if (!inserted) {
            fail("%s: %s: duplicate token '%s' at ids %d and %zu", f.path().c_str(), kKeyTokens, v.text[i].c_str(),
                 it->second, i);
        }
    }
}

// Special ids from the file; an id outside the vocabulary keeps the default (as llama.cpp).
void read_special_ids(const GgufFile& f, Vocab& v) {
    const struct {
        const char* key;
        int32_t* id;
    } keys[] = {
        {"tokenizer.ggml.bos_token_id", &v.bos},         {"tokenizer.ggml.eos_token_id", &v.eos},
        {"tokenizer.ggml.eot_token_id", &v.eot},         {"tokenizer.ggml.eom_token_id", &v.eom},
        {"tokenizer.ggml.unknown_token_id", &v.unk},     {"tokenizer.ggml.seperator_token_id", &v.sep},
        {"tokenizer.ggml.padding_token_id", &v.pad},     {"tokenizer.ggml.mask_token_id", &v.mask},
        {"tokenizer.ggml.fim_pre_token_id", &v.fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf},
        {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad},
        {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep},
        {"tokenizer.ggml.prefix_token_id", &v.fim_pre},  {"tokenizer.ggml.suffix_token_id", &v.fim_suf},
        {"tokenizer.ggml.middle_token_id", &v.fim_mid},
    };
    const int64_t n = v.n_vocab();
    for (const auto& k : keys) {
        if (*k.id >= n) *k.id = -1;
        if (!f.has(k.key)) continue;
        const int64_t id = f.get_int(k.key);
        if (id < 0 || id >= n) {
            BEE_LOG_WARN("%s: %s = %lld is outside the vocabulary (%lld tokens); using %d", f.path().c_str(), k.key,
                         (long long)id, (long long)n, *k.id);
            continue;
        }
        *k.id = (int32_t)id;
    }
    v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", v.add_bos);
    v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", v.add_eos);
    if (v.add_bos && v.bos < 0) {
        fail("%s: tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is not set", f.path().c_str());
    }
    if (v.add_eos && v.eos < 0) {
        fail("%s: tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is not set", f.path().c_str());
    }
}

bool text_in(const std::string& t, std::initializer_list<const char*> list) {
    for (const char* s : list) {
        if (t == s) return true;
    }
    return false;
}

// Marks `id` as the special token `slot` if none is set yet; such tokens are always control.
void detect(Vocab& v, int32_t id, int32_t& slot, std::initializer_list<const char*> texts) {
    if (slot >= 0 || !text_in(v.text[id], texts)) return;
    slot = id;
    v.attr[id] |= kAttrControl;
}

// Every text the detection lists below name starts with one of these bytes ('\xE2' opens U+2581).
bool may_be_special_text(const std::string& t) {
    const char c = t[0];
    return c == '<' || c == '[' || c == '_' || c == '\xE2';
}

// llama.cpp finds EOT/EOM/FIM tokens by their text when the file does not name them.
void detect_special_by_text(Vocab& v) {
    for (int32_t id = 0; id < v.n_vocab(); ++id) {
        if (!may_be_special_text(v.text[id])) continue;
        detect(v, id, v.eot,
               {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
                "_<EOT>", "[EOT]", "<\uFF5Cend\u2581of\u2581sentence\uFF5C>", "<end_of_utterance>"});
        detect(v, id, v.eom, {"<|eom_id|>"});
        detect(v, id, v.fim_pre,
               {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\uFF5Cfim\u2581begin\uFF5C>", "<PRE>",
                "\u2581<PRE>", "<|code_prefix|>", "<|prefix|>"});
        detect(v, id, v.fim_suf,
               {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\uFF5Cfim\u2581hole\uFF5C>", "<SUF>", "\u2581<SUF>",
                "<|code_suffix|>", "<|suffix|>"});
        detect(v, id, v.fim_mid,
               {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\uFF5Cfim\u2581end\uFF5C>", "<MID>", "\u2581<MID>",
                "<|code_middle|>", "<|middle|>"});
        detect(v, id, v.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
        detect(v, id, v.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
        detect(v, id, v.fim_sep, {"<|file_sep|>"});
    }
    for (int32_t id = 0; id < v.n_vocab(); ++id) {
        if ((v.attr[id] & kAttrControl) && v.text[id].find("unused") != std::string::npos) v.attr[id] |= kAttrUnused;
        // gpt-oss: these always render (llama.cpp makes them user-defined)
        if (v.text[id][0] == '<' && text_in(v.text[id], {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})) {
            v.attr[id] = kAttrUserDefined;
        }
    }
}

// End-of-generation set: FIM pad/repo/sep, tokens with end-of-turn texts, eos, eot, eom.
void build_eog(Vocab& v) {
    v.is_eog.assign((size_t)v.n_vocab(), 0);
    for (int32_t id : {v.fim_pad, v.fim_rep, v.fim_sep}) {
        if (id >= 0) v.is_eog[id] = 1;
    }
    for (int32_t id = 0; id < v.n_vocab(); ++id) {
        if (!may_be_special_text(v.text[id])) continue;
        if (text_in(v.text[id], {"<|eot_id|>",
                                 "<|im_end|>",
                                 "<|end|>",
                                 "<|return|>",
                                 "<|call|>",
                                 "<|flush|>",
                                 "<|calls|>",
                                 "<end_of_turn>",
                                 "<|endoftext|>",
                                 "</s>",
                                 "<|eom_id|>",
                                 "<EOT>",
                                 "_<EOT>",
                                 "[EOT]",
                                 "[EOS]",
                                 "<|end_of_text|>",
                                 "<end_of_utterance>",
                                 "<eos>",
                                 "<turn|>",
                                 "<|tool_response>",
                                 "<\uFF5Cend\u2581of\u2581sentence\uFF5C>",
                                 "[e~["})) {
            v.is_eog[id] = 1;
            v.attr[id] |= kAttrControl;
        }
    }
    for (int32_t id : {v.eos, v.eot, v.eom}) {
        if (id >= 0) v.is_eog[id] = 1;
    }
    // gpt-oss / solar-open: "<|end|>" ends a message, not the generation, when <|return|>/<|call|> exist.
    auto eog_with = [&](const char* t) {
        int32_t id = v.find(t);
        return id >= 0 && v.is_eog[id] ? id : -1;
    };
    const int32_t end = eog_with("<|end|>");
    const bool has_call = eog_with("<|call|>") >= 0 || eog_with("<|calls|>") >= 0;
    if (end >= 0 && has_call && (eog_with("<|return|>") >= 0 || eog_with("<|flush|>") >= 0)) {
        v.is_eog[end] = 0;
        v.attr[end] = kAttrUserDefined;
    }
    // gemma4 / paddleocr: "</s>" is not an end of generation there.
    const int32_t s = eog_with("</s>");
    if (s >= 0 && eog_with("<|tool_response>") >= 0) {
        v.is_eog[s] = 0;
        v.attr[s] = kAttrNormal;
    }
}

std::string lower(std::string s) {
    for (char& c : s) c = (char)std::tolower((unsigned char)c);
    return s;
}

// Special tokens matched in raw text (longest first) and the per-model lstrip/rstrip attributes.
void build_special_tokens(const GgufFile& f, Vocab& v) {
    for (int32_t id = 0; id < v.n_vocab(); ++id) {
        if (v.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) v.special_tokens.push_back(id);
    }
    std::stable_sort(v.special_tokens.begin(), v.special_tokens.end(),
                     [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });

    const std::string name = lower(f.get_str("general.name", ""));
    const std::string arch = f.get_str("general.architecture", "");
    auto set_attr = [&](const char* text, uint32_t bit, bool on) {
        const int32_t id = v.find(text);
        if (id >= 0) v.attr[id] = on ? (v.attr[id] | bit) : (v.attr[id] & ~bit);
    };
    auto has = [](const std::string& s, const char* sub) { return s.find(sub) != std::string::npos; };
    if (has(v.pre, "jina-v2-de") || has(v.pre, "jina-v2-es") || has(v.pre, "jina-v2-code") ||
        has(arch, "nomic-bert-moe") || has(arch, "jina-bert-v3")) {
        set_attr("<mask>", kAttrLstrip, true);
    } else if (has(name, "phi-3") || has(name, "phi3")) {
        for (int32_t id : v.special_tokens) v.attr[id] |= kAttrRstrip;
        set_attr("</s>", kAttrRstrip, true);
        for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, kAttrRstrip, false);
    } else if (has(name, "modern-bert")) {
        set_attr("[MASK]", kAttrLstrip, true);
    }
}

// SPM byte fallback: "<0xXX>", else the byte itself as a token.
void build_byte_tokens(Vocab& v) {
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        snprintf(hex, sizeof(hex), "<0x%02X>", b);
        int32_t id = v.find(hex);
        if (id < 0) id = v.find(std::string(1, (char)b));
        v.byte_token[b] = id;
    }
}

}  // namespace

Vocab load_vocab(const GgufFile& f) {
    Vocab v;
    read_model_type(f, v);
    read_tokens(f, v);
    if (v.type == VocabType::bpe) {
        if (!f.has(kKeyMerges)) fail("%s: %s: missing (required by BPE vocabularies)", f.path().c_str(), kKeyMerges);
        v.merges = f.get_str_array(kKeyMerges);
    }
    read_special_ids(f, v);
    detect_special_by_text(v);
    build_eog(v);
    build_special_tokens(f, v);
    build_byte_tokens(v);
    return v;
}

}  // namespace bee
