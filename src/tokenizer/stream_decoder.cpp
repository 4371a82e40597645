// tokenizer/stream_decoder: incremental detokenization that holds back an incomplete UTF-8 tail
// (an emoji split over byte tokens) and replaces invalid bytes with U+FFFD.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace bee {

std::string StreamDecoder::push(int32_t id) {
    pending_ += tok_.token_to_piece(id, special_ || std::find(shown_.begin(), shown_.end(), id) != shown_.end());
    std::string out;
    size_t i = 0;
    while (i < pending_.size()) {
        uint32_t cp;
        size_t bad = 0;
        const int len = utf8_decode(pending_.data() + i, pending_.size() - i, &cp, &bad);
        if (len < 0) break;  // truncated: wait for the next token
        if (len == 0) {
            utf8_append(out, kReplacementChar);
            i += bad;
        } else {
            out.append(pending_, i, (size_t)len);
            i += (size_t)len;
        }
    }
    pending_.erase(0, i);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out = utf8_sanitize(pending_);
    pending_.clear();
    return out;
}

}  // namespace bee
