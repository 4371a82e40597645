// tokenizer/tokenizer: vocab from tokenizer.ggml.*, SPM and byte-level BPE with GGUF pre-tokenizers,
// special tokens, and streaming-safe detokenization.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace bee {

class GgufFile;

enum class TokenType : int32_t {  // tokenizer.ggml.token_type values
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6,
};

class Tokenizer {
public:
    // Reads tokenizer.ggml.* from the file. Throws Error naming the file and key on bad/missing data
    // or an unsupported tokenizer.ggml.model / tokenizer.ggml.pre.
    static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& f);
    virtual ~Tokenizer() = default;

    // add_special: add BOS/EOS as the vocab's add_bos/add_eos flags say.
    // parse_special: text of control tokens (e.g. "<|im_start|>") becomes those tokens. User-defined
    // tokens are matched in the text either way (llama.cpp and Hugging Face do the same).
    virtual std::vector<int32_t> encode(const std::string& text, bool add_special, bool parse_special) const = 0;
    // Bytes of one token (byte tokens become their byte, SPM "▁" becomes a space, BPE bytes unmapped).
    // Control tokens give their text only if `special` is true, else "".
    // Throws Error for an id outside [0, n_vocab).
    virtual std::string token_to_piece(int32_t id, bool special) const = 0;
    // Concatenated pieces, as llama_detokenize without its clean-up pass: if the vocab adds a space
    // prefix (SPM, add_space_prefix), a leading space of ids[0]'s piece is dropped (only ids[0], so
    // after a BOS the space stays, as in llama.cpp); for lossless vocabularies
    // decode(encode(s, false, false)) == s. Streaming output should use StreamDecoder, which never
    // drops anything.
    std::string decode(const std::vector<int32_t>& ids, bool special = false) const;

    virtual int32_t n_vocab() const = 0;
    virtual int32_t bos() const = 0;  // -1 if none
    virtual int32_t eos() const = 0;  // -1 if none
    virtual bool add_bos() const = 0;
    virtual bool add_eos() const = 0;
    virtual bool is_eog(int32_t id) const = 0;  // end of generation: eos, eot, eom, ...
    // The file's type after llama.cpp's fix-ups (e.g. end-of-turn texts such as <|im_end|> are control).
    virtual TokenType token_type(int32_t id) const = 0;
    virtual const std::string& token_text(int32_t id) const = 0;  // raw vocab string
    virtual const char* model_name() const = 0;                   // "llama" (SPM) or "gpt2" (BPE)

    // Additions beyond the first API sketch (defaults keep test doubles simple).
    virtual bool add_space_prefix() const { return false; }  // tokenizer.ggml.add_space_prefix (SPM)
    // Id of the token whose vocab text is exactly `text` (e.g. "<|im_start|>"), -1 if none.
    virtual int32_t find_token(std::string_view text) const {
        (void)text;
        return -1;
    }
    virtual int32_t eot() const { return -1; }  // end-of-turn token (e.g. <|im_end|>), -1 if none
    // Fill-in-the-middle tokens (from the file's FIM keys, else found by their text as llama.cpp does);
    // -1 where the vocabulary has none.
    struct Fim {
        int32_t pre = -1, suf = -1, mid = -1, pad = -1, rep = -1, sep = -1;
    };
    virtual Fim fim() const { return {}; }
};

// Turns a stream of token ids into text without ever emitting part of a UTF-8 character.
class StreamDecoder {
public:
    // special: every control token is decoded as its text; else only those in `shown` (markers a reply
    // parser reads, such as Mistral's [TOOL_CALLS]).
    explicit StreamDecoder(const Tokenizer& tok, bool special = false, std::vector<int32_t> shown = {})
        : tok_(tok), special_(special), shown_(std::move(shown)) {}
    // Returns the text that is complete after this token (possibly "").
    std::string push(int32_t id);
    // Returns whatever is held back (invalid or truncated UTF-8 comes out as U+FFFD).
    std::string flush();

private:
    const Tokenizer& tok_;
    bool special_;
    std::vector<int32_t> shown_;
    std::string pending_;
};

}  // namespace bee
