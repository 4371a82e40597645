// tests/fuzz/fuzz_sample_gbnf: libFuzzer target for the GBNF parser and the grammar matcher; any input is
// a grammar that must parse (then follow a few characters) or throw bee::Error, never crash or hang. The
// whole-vocabulary scan (a prefix trie walk) must agree with checking each token, at every state visited.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "sample/grammar.h"

namespace {

// Tokens cut from the grammar's own text (lengths 1-4 from each offset, so prefixes are shared and
// characters are split), plus a few fixed ones.
void fill_vocab(std::string_view src, bee::GrammarVocab& v) {
    for (const char* t : {"a", "ab", "\"", " ", "\xc3", "\xc3\xa9", "\xe6\x97\xa5", "{", "}", "0"}) v.text.push_back(t);
    for (size_t i = 0; i < src.size() && i < 64; i++)
        for (size_t n = 1; n <= 4 && i + n <= src.size(); n++) v.text.push_back(std::string(src.substr(i, n)));
    v.is_eog.assign(v.text.size(), 0);
}

void check_scan(const bee::GrammarMatcher& m, const bee::GrammarVocab& v) {
    std::vector<uint8_t> ok(v.text.size(), 0);
    if (!m.allows_each(v, ok, bee::kGrammarMaxScanWork)) return;  // over the scan budget: a partial verdict
    for (size_t id = 0; id < v.text.size(); id++)
        if ((bool)ok[id] != m.allows(v.text[id])) abort();  // the trie walk and the per-token check disagree
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view src(reinterpret_cast<const char*>(data), size);
    try {
        bee::GrammarMatcher m(bee::Grammar::parse(src));
        bee::GrammarVocab v;
        fill_vocab(src, v);
        check_scan(m, v);
        // Follow the grammar's own text a little: it exercises steps, splits inside characters and ends.
        for (size_t i = 0; i < src.size() && i < 16; i++) {
            m.allows(src.substr(i, 3));
            if (m.accept(src.substr(i, 1))) check_scan(m, v);
            m.can_end();
        }
        m.accept_token(7);
    } catch (const bee::Error&) {}
    return 0;
}
