// tokenizer/spm: score-driven pair merging over UTF-8 characters with byte fallback, the algorithm
// of llama.cpp's llm_tokenizer_spm (a priority queue of candidate pairs, stale entries skipped).
#include "tokenizer/spm.h"

#include <algorithm>
#include <queue>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace bee {

namespace {

struct Symbol {
    int32_t prev, next;
    uint32_t start, len;  // bytes of `text`; len 0 once merged into its left neighbour
};

struct Bigram {
    float score;
    int32_t left, right;
    uint32_t size;  // bytes of the pair when queued; a mismatch later means the entry is stale
};

// Highest score first, then leftmost.
struct BigramBefore {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

void spm_tokenize(const Vocab& v, std::string_view text, std::vector<int32_t>& out) {
    std::vector<Symbol> sym;
    sym.reserve(text.size());
    for (size_t off = 0; off < text.size();) {
        const size_t len = std::min(utf8_lead_len((uint8_t)text[off]), text.size() - off);
        const int32_t i = (int32_t)sym.size();
        sym.push_back({i - 1, off + len < text.size() ? i + 1 : -1, (uint32_t)off, (uint32_t)len});
        off += len;
    }
    if (sym.empty()) return;

    std::priority_queue<Bigram, std::vector<Bigram>, BigramBefore> queue;
    auto add_bigram = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const uint32_t size = sym[l].len + sym[r].len;
        const int32_t id = v.find(text.substr(sym[l].start, size));
        if (id >= 0) queue.push({v.score[id], l, r, size});
    };
    for (int32_t i = 1; i < (int32_t)sym.size(); ++i) add_bigram(i - 1, i);

    while (!queue.empty()) {
        const Bigram bg = queue.top();
        queue.pop();
        Symbol& l = sym[bg.left];
        Symbol& r = sym[bg.right];
        if (l.len == 0 || r.len == 0 || l.len + r.len != bg.size) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = bg.left;
        add_bigram(l.prev, bg.left);
        add_bigram(bg.left, l.next);
    }

    // Every merged symbol is a token by construction; single characters may not be.
    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        const std::string_view piece = text.substr(sym[i].start, sym[i].len);
        const int32_t id = v.find(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        for (char c : piece) {
            const int32_t b = v.byte_token[(uint8_t)c];
            if (b >= 0) {
                out.push_back(b);
            } else if (v.unk >= 0) {
                out.push_back(v.unk);
            }
        }
    }
}

}  // namespace bee
