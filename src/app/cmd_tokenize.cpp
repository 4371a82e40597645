// app/cmd_tokenize: `bee tokenize -m FILE -p TEXT`: prints the token ids as a JSON array (the format
// of llama-tokenize --ids). Loads only the tokenizer metadata, never the weights.
#include <cstdio>
#include <string>

#include "app/args.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace bee {

namespace {

struct TokenizeOptions {
    std::string model;
    std::string prompt;
    std::string prompt_file;
    bool has_prompt = false;
    bool no_bos = false;
    bool special = false;
    bool show_pieces = false;
};

// "[1, 2, 3]"
std::string ids_json(const std::vector<int32_t>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

// The piece with control bytes escaped so each token stays on one line.
std::string printable_piece(const std::string& p) {
    std::string out;
    for (unsigned char c : p) {
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\\') {
            out += "\\\\";
        } else if (c < 0x20 || c == 0x7f) {
            out += strfmt("\\x%02x", c);
        } else {
            out += (char)c;
        }
    }
    return out;
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
    TokenizeOptions o;
    ArgParser p("bee tokenize", "Print the token ids of a text as a JSON array, e.g. [1, 2, 3].");
    p.str("-m,--model", &o.model, "FILE", "GGUF file (only its tokenizer is read)");
    p.custom("-p,--prompt", "TEXT", "text to tokenize", [&](const std::string& v) {
        o.prompt = v;
        o.has_prompt = true;
    });
    p.str("-f,--file", &o.prompt_file, "FILE", "read the text from a file");
    p.flag("--no-bos", &o.no_bos, "do not add BOS/EOS even if the vocab asks for them");
    p.flag("--special", &o.special, "parse special-token text such as <|im_start|> into those tokens");
    p.flag("--show-pieces", &o.show_pieces, "after the array, print one 'id -> piece' line per token");
    try {
        if (!p.parse(argc, argv)) return 0;
        if (o.model.empty()) fail("no model given (use -m FILE)");
        if (o.has_prompt && !o.prompt_file.empty()) fail("give -p or -f, not both");
        if (!o.has_prompt && o.prompt_file.empty()) fail("no text given (use -p TEXT or -f FILE)");
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n\n%s", e.what(), p.usage().c_str());
        return 2;
    }
    try {
        const std::string text = o.prompt_file.empty() ? o.prompt : read_file(o.prompt_file);
        const GgufFile f = GgufFile::open(o.model);
        const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(f);
        const std::vector<int32_t> ids = tok->encode(text, !o.no_bos, o.special);
        printf("%s\n", ids_json(ids).c_str());
        if (o.show_pieces) {
            for (int32_t id : ids) printf("%6d -> '%s'\n", id, printable_piece(tok->token_to_piece(id, true)).c_str());
        }
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace bee
