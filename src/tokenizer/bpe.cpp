// tokenizer/bpe: byte-level BPE. Each pre-token is GPT-2 byte-encoded, starts as one symbol per
// byte, and the adjacent pair with the lowest merge rank (leftmost on ties) is merged until none
// is left; a priority queue with stale-entry checks keeps this O(n log n) per pre-token.
#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "tokenizer/unicode.h"

namespace bee {

namespace {

uint64_t pair_key(int32_t l, int32_t r) { return ((uint64_t)(uint32_t)l << 32) | (uint32_t)r; }

struct Symbol {
    int32_t prev, next;
    uint32_t start, len;  // bytes of the raw pre-token
    int32_t id;           // token id of the symbol's text, -1 if not a token
};

struct Bigram {
    int32_t rank;
    int32_t left, right;
    uint32_t size;  // left.len + right.len when queued; a mismatch later means the entry is stale
    int32_t result;
};

// Lowest rank first, then leftmost.
struct BigramAfter {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

}  // namespace

struct BpeModel::Scratch {
    std::vector<Symbol> sym;
    std::priority_queue<Bigram, std::vector<Bigram>, BigramAfter> queue;
    std::string enc, enc2;
};

BpeModel::BpeModel(const Vocab& v) : splitter_(v.pre_spec->regexes) {
    for (int b = 0; b < 256; ++b) byte_id_[b] = v.find(gpt2_byte_to_utf8((uint8_t)b));
    by_id_.reserve(v.merges.size());
    for (size_t i = 0; i < v.merges.size(); ++i) {
        const std::string& m = v.merges[i];
        const size_t sp = m.find(' ', 1);
        if (sp == std::string::npos) continue;
        const std::string_view first(m.data(), sp), second(m.data() + sp + 1, m.size() - sp - 1);
        const int32_t l = v.find(first), r = v.find(second);
        const Merge merge{(int32_t)i, v.find(std::string(first) + std::string(second))};
        if (l >= 0 && r >= 0) {
            by_id_.emplace(pair_key(l, r), merge);  // note: emplace keeps the first (lowest) rank
        } else {
            by_text_.emplace(std::string(first) + " " + std::string(second), merge);
        }
    }
}

const BpeModel::Merge* BpeModel::find_merge(std::string_view word, const Scratch& s, int32_t l, int32_t r) const {
    const Symbol& a = s.sym[l];
    const Symbol& b = s.sym[r];
    if (a.id >= 0 && b.id >= 0) {
        auto it = by_id_.find(pair_key(a.id, b.id));
        return it == by_id_.end() ? nullptr : &it->second;
    }
    if (by_text_.empty()) return nullptr;
    std::string key;
    gpt2_encode(word.substr(a.start, a.len), key);
    key += ' ';
    gpt2_encode(word.substr(b.start, b.len), key);
    auto it = by_text_.find(std::string_view(key));
    return it == by_text_.end() ? nullptr : &it->second;
}

void BpeModel::tokenize_word(const Vocab& v, std::string_view word, Scratch& s, std::vector<int32_t>& out) const {
    if (v.ignore_merges) {
        s.enc.clear();
        gpt2_encode(word, s.enc);
        const int32_t id = v.find(s.enc);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }
    const int32_t n = (int32_t)word.size();
    s.sym.resize((size_t)n);
    for (int32_t i = 0; i < n; ++i) {
        s.sym[i] = {i - 1, i + 1 < n ? i + 1 : -1, (uint32_t)i, 1, byte_id_[(uint8_t)word[i]]};
    }

    auto add_bigram = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const Merge* m = find_merge(word, s, l, r);
        if (m) s.queue.push({m->rank, l, r, s.sym[l].len + s.sym[r].len, m->result});
    };
    for (int32_t i = 1; i < n; ++i) add_bigram(i - 1, i);

    while (!s.queue.empty()) {
        const Bigram bg = s.queue.top();
        s.queue.pop();
        Symbol& l = s.sym[bg.left];
        Symbol& r = s.sym[bg.right];
        if (l.len == 0 || r.len == 0 || l.next != bg.right || l.len + r.len != bg.size) continue;
        l.len += r.len;
        l.id = bg.result;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) s.sym[r.next].prev = bg.left;
        add_bigram(l.prev, bg.left);
        add_bigram(bg.left, l.next);
    }

    for (int32_t i = 0; i >= 0 && i < n; i = s.sym[i].next) {
        const Symbol& sy = s.sym[i];
        if (sy.id >= 0) {
            out.push_back(sy.id);
            continue;
        }
        // Not a token: llama.cpp looks up each byte of the encoded text as a one-byte token.
        s.enc2.clear();
        gpt2_encode(word.substr(sy.start, sy.len), s.enc2);
        for (char c : s.enc2) {
            const int32_t id = v.find(std::string_view(&c, 1));
            if (id >= 0) out.push_back(id);
        }
    }
}

void BpeModel::tokenize(const Vocab& v, std::string_view text, std::vector<int32_t>& out) const {
    std::string clean;
    if (!utf8_is_valid(text)) {
        clean = utf8_sanitize(text);
        text = clean;
    }
    Scratch s;
    for (const TextRange& r : splitter_.split(text)) tokenize_word(v, text.substr(r.start, r.len), s, out);
}

}  // namespace bee
