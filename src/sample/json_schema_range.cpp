// sample/json_schema_range: integers within [minimum, maximum] as an exact GBNF digit grammar, so that
// a schema's integer bounds hold for every output (JSON decimal form: no leading zeros, no "-0").
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "sample/json_schema.h"

namespace bee {

namespace {

constexpr int kMaxDigits = 16;                       // json-integer's limit (see kPrimitives)
constexpr int64_t kMaxMagnitude = 9999999999999999;  // the largest 16-digit number

std::string alts(const std::vector<std::string>& a) {
    if (a.size() == 1) return a[0];
    std::string out;
    for (const std::string& x : a) out += (out.empty() ? "( " : " | ") + x;
    return out + " )";
}

std::string digit_class(char lo, char hi) {
    if (lo == hi) return std::string("\"") + lo + "\"";
    return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) {
    if (n == 0) return "";
    return n == 1 ? " [0-9]" : " [0-9]{" + std::to_string(n) + "}";
}

// Digit strings of one length between lo and hi inclusive (lo <= hi, leading zeros allowed here).
std::string same_length(const std::string& lo, const std::string& hi) {
    const size_t n = lo.size();
    if (n == 0) return "";
    if (lo == hi) return "\"" + lo + "\"";
    const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
    if (lo_rest == std::string(n - 1, '0') && hi_rest == std::string(n - 1, '9'))
        return digit_class(lo[0], hi[0]) + any_digits(n - 1);
    if (lo[0] == hi[0]) return digit_class(lo[0], lo[0]) + " " + same_length(lo_rest, hi_rest);
    // lo[0] then anything >= lo_rest; the digits strictly between with any tail; hi[0] then <= hi_rest.
    std::vector<std::string> a = {digit_class(lo[0], lo[0]) + " " + same_length(lo_rest, std::string(n - 1, '9'))};
    if (lo[0] + 1 <= hi[0] - 1) a.push_back(digit_class((char)(lo[0] + 1), (char)(hi[0] - 1)) + any_digits(n - 1));
    a.push_back(digit_class(hi[0], hi[0]) + " " + same_length(std::string(n - 1, '0'), hi_rest));
    return alts(a);
}

int64_t pow10(size_t n) {
    int64_t p = 1;
    while (n--) p *= 10;
    return p;
}

// Non-negative a..b (b empty: no upper bound but json-integer's 16 digits) without leading zeros.
std::string non_negative(int64_t a, std::optional<int64_t> b) {
    const size_t la = std::to_string(a).size();
    const size_t lb = b ? std::to_string(*b).size() : la;
    std::vector<std::string> a_list;
    for (size_t len = la; len <= lb; len++) {
        const int64_t lo = std::max(a, len == 1 ? 0 : pow10(len - 1));
        const int64_t hi = b ? std::min(*b, pow10(len) - 1) : pow10(len) - 1;
        if (lo <= hi) a_list.push_back(same_length(std::to_string(lo), std::to_string(hi)));
    }
    if (!b && la < (size_t)kMaxDigits)  // every longer number
        a_list.push_back("[1-9] [0-9]{" + std::to_string(la) + "," + std::to_string(kMaxDigits - 1) + "}");
    return alts(a_list);
}

}  // namespace

std::string gbnf_int_range(std::optional<int64_t> lo, std::optional<int64_t> hi, const std::string& path) {
    if (lo && *lo < -kMaxMagnitude) lo.reset();  // json-integer cannot write anything beyond anyway
    if (hi && *hi > kMaxMagnitude) hi.reset();
    if ((lo && *lo > kMaxMagnitude) || (hi && *hi < -kMaxMagnitude))
        fail("json_schema: integer bounds beyond 16 digits at %s; use bounds within +-%lld", path.c_str(),
             (long long)kMaxMagnitude);
    if (lo && hi && *lo > *hi)
        fail("json_schema: the integer range is empty (minimum %lld > maximum %lld) at %s; fix the bounds",
             (long long)*lo, (long long)*hi, path.c_str());
    std::vector<std::string> a;
    if (!lo || *lo < 0) {  // negatives: "-" and a magnitude in [max(1, -hi), -lo]
        const int64_t m_lo = hi && *hi < 0 ? -*hi : 1;
        a.push_back("\"-\" " + non_negative(m_lo, lo ? std::optional<int64_t>(-*lo) : std::nullopt));
    }
    if (!hi || *hi >= 0) a.push_back(non_negative(lo && *lo > 0 ? *lo : 0, hi));
    return alts(a);
}

}  // namespace bee
