// sample/sampler_order: the names of the reorderable sampler steps, as llama.cpp's `samplers` field and
// `--samplers` / `--sampling-seq` options spell them.
#include <cstring>

#include "base/error.h"
#include "sample/sampler.h"

namespace bee {

namespace {

struct Name {
    const char* name;
    SamplerStep step;
};

// The first name of each step is its canonical one.
constexpr Name kNames[] = {
    {"penalties", SamplerStep::penalties},
    {"dry", SamplerStep::dry},
    {"top_n_sigma", SamplerStep::top_n_sigma},
    {"top-n-sigma", SamplerStep::top_n_sigma},
    {"top_k", SamplerStep::top_k},
    {"top-k", SamplerStep::top_k},
    {"typ_p", SamplerStep::typical},
    {"typical_p", SamplerStep::typical},
    {"typical-p", SamplerStep::typical},
    {"typ-p", SamplerStep::typical},
    {"typ", SamplerStep::typical},
    {"typical", SamplerStep::typical},
    {"top_p", SamplerStep::top_p},
    {"top-p", SamplerStep::top_p},
    {"nucleus", SamplerStep::top_p},
    {"min_p", SamplerStep::min_p},
    {"min-p", SamplerStep::min_p},
    {"xtc", SamplerStep::xtc},
    {"temperature", SamplerStep::temperature},
    {"temp", SamplerStep::temperature},
};

constexpr struct {
    char letter;
    SamplerStep step;
} kLetters[] = {{'e', SamplerStep::penalties}, {'d', SamplerStep::dry},     {'s', SamplerStep::top_n_sigma},
                {'k', SamplerStep::top_k},     {'y', SamplerStep::typical}, {'p', SamplerStep::top_p},
                {'m', SamplerStep::min_p},     {'x', SamplerStep::xtc},     {'t', SamplerStep::temperature}};

const char* kKnown = "penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature";

bool find_name(const std::string& s, SamplerStep* out) {
    for (const Name& n : kNames)
        if (s == n.name) {
            *out = n.step;
            return true;
        }
    return false;
}

}  // namespace

const std::vector<SamplerStep>& default_sampler_order() {
    static const std::vector<SamplerStep> order = {SamplerStep::penalties,   SamplerStep::dry,
                                                   SamplerStep::top_n_sigma, SamplerStep::top_k,
                                                   SamplerStep::typical,     SamplerStep::top_p,
                                                   SamplerStep::min_p,       SamplerStep::xtc,
                                                   SamplerStep::temperature};
    return order;
}

std::vector<SamplerStep> parse_sampler_order(const std::vector<std::string>& names) {
    std::vector<SamplerStep> out;
    for (const std::string& n : names) {
        SamplerStep s;
        if (n == "infill") fail("sampler 'infill' is not supported by Bee (known: %s)", kKnown);
        if (!find_name(n, &s)) fail("unknown sampler '%s' (known: %s)", n.c_str(), kKnown);
        out.push_back(s);
    }
    return out;
}

std::vector<SamplerStep> parse_sampler_order(const std::string& text) {
    SamplerStep s;
    if (text.find(';') == std::string::npos && !find_name(text, &s)) {  // one letter per step
        std::vector<SamplerStep> out;
        for (char c : text) {
            bool found = false;
            for (const auto& l : kLetters)
                if (l.letter == c) {
                    out.push_back(l.step);
                    found = true;
                }
            if (!found)
                fail(
                    "unknown sampler letter '%c' in \"%s\" (e penalties, d dry, s top_n_sigma, k top_k, y typical, "
                    "p top_p, m min_p, x xtc, t temperature)",
                    c, text.c_str());
        }
        return out;
    }
    std::vector<std::string> names;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t end = std::min(text.find(';', at), text.size());
        if (end > at) names.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return parse_sampler_order(names);
}

std::string sampler_order_name(const std::vector<SamplerStep>& order) {
    std::string out;
    for (SamplerStep s : order) {
        for (const Name& n : kNames)
            if (n.step == s) {
                out += (out.empty() ? "" : ";") + std::string(n.name);
                break;
            }
    }
    return out;
}

}  // namespace bee
