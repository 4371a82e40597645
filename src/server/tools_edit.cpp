// server/tools_edit: the edit_file tool — exact replacements, each old text unique and the edits disjoint,
// with llama-server's fallback when an old text is only found after normalizing (trailing whitespace,
// typographic quotes, dashes and spaces): then only the lines an edit touches take the normalized text.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "server/tools_builtin.h"

namespace bee::server {

namespace {

struct Edit {
    size_t index;  // in params["edits"]
    size_t at;     // offset of the old text in the content the edits apply to
    size_t len;
    std::string new_text;
};

void replace_all(std::string& s, const std::string& from, const char* to) {
    for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += strlen(to))
        s.replace(pos, from.size(), to);
}

// One line for the fuzzy match: no trailing blanks; U+2018..U+201B -> ', U+201C..U+201F -> ", U+2010..U+2015
// and U+2212 -> -, U+00A0, U+2002..U+200A, U+202F, U+205F, U+3000 -> space.
std::string normalize_line(std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
    if (s.find_first_of("\xC2\xE2\xE3") == std::string::npos) return s;  // ASCII: nothing to map
    auto seq = [](int a, int b, int c) { return std::string{(char)a, (char)b, (char)c}; };
    for (int c = 0x98; c <= 0x9B; c++) replace_all(s, seq(0xE2, 0x80, c), "'");
    for (int c = 0x9C; c <= 0x9F; c++) replace_all(s, seq(0xE2, 0x80, c), "\"");
    for (int c = 0x90; c <= 0x95; c++) replace_all(s, seq(0xE2, 0x80, c), "-");
    replace_all(s, seq(0xE2, 0x88, 0x92), "-");
    replace_all(s, "\xC2\xA0", " ");
    for (int c = 0x82; c <= 0x8A; c++) replace_all(s, seq(0xE2, 0x80, c), " ");
    replace_all(s, seq(0xE2, 0x80, 0xAF), " ");
    replace_all(s, seq(0xE2, 0x81, 0x9F), " ");
    replace_all(s, seq(0xE3, 0x80, 0x80), " ");
    return s;
}

// Every line normalized; the line count and the '\n's stay where they were.
std::string normalize(const std::string& text) {
    std::string out;
    for (size_t start = 0;;) {
        const size_t nl = text.find('\n', start);
        out += normalize_line(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos) return out;
        out += '\n';
        start = nl + 1;
    }
}

size_t count_disjoint(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t pos = 0; (pos = text.find(needle, pos)) != std::string::npos; pos += needle.size()) n++;
    return n;
}

// The lines of `text` with their '\n' (the last one may have none).
std::vector<std::string> lines_with_ends(const std::string& text) {
    std::vector<std::string> out;
    for (size_t start = 0; start < text.size();) {
        const size_t nl = text.find('\n', start);
        const size_t end = nl == std::string::npos ? text.size() : nl + 1;
        out.push_back(text.substr(start, end - start));
        start = end;
    }
    return out;
}

// `edits` (sorted, disjoint) applied to text[from, to), offsets being those of `text`.
std::string apply(const std::string& text, size_t from, size_t to, const std::vector<Edit>& edits) {
    std::string out;
    size_t pos = from;
    for (const Edit& e : edits) {
        out.append(text, pos, e.at - pos);
        out += e.new_text;
        pos = e.at + e.len;
    }
    out.append(text, pos, to - pos);
    return out;
}

// Fuzzy edits: the lines an edit touches come from the normalized text with the edits applied, every
// other line from the original untouched (their trailing blanks and quotes kept).
std::string apply_keeping_lines(const std::string& original, const std::string& base, const std::vector<Edit>& edits) {
    const std::vector<std::string> orig_lines = lines_with_ends(original), base_lines = lines_with_ends(base);
    std::vector<size_t> starts;  // offset of each base line
    for (size_t i = 0, off = 0; i < base_lines.size(); off += base_lines[i++].size()) starts.push_back(off);
    auto line_of = [&](size_t off) {
        return (size_t)(std::upper_bound(starts.begin(), starts.end(), off) - starts.begin()) - 1;
    };
    std::string out;
    size_t next_line = 0;
    for (size_t i = 0; i < edits.size();) {
        const size_t first = line_of(edits[i].at);
        size_t last = line_of(edits[i].at + edits[i].len - 1);
        size_t j = i + 1;
        for (; j < edits.size() && line_of(edits[j].at) <= last; j++)
            last = std::max(last, line_of(edits[j].at + edits[j].len - 1));
        for (; next_line < first; next_line++) out += orig_lines[next_line];
        const size_t to = starts[last] + base_lines[last].size();
        out += apply(base, starts[first], to, std::vector<Edit>(edits.begin() + i, edits.begin() + j));
        next_line = last + 1;
        i = j;
    }
    for (; next_line < orig_lines.size(); next_line++) out += orig_lines[next_line];
    return out;
}

std::string fmt_index(const char* f, size_t a, const std::string& path) {
    char buf[160];
    snprintf(buf, sizeof buf, f, a);
    return buf + path;
}

}  // namespace

Json edit_file(const Json& params, ToolIo& io) {
    const std::string path = need_string(params, "path", "edit_file.params");
    const Json* list = opt_field(params, "edits");
    if (!list || !list->is_array() || list->empty()) return {{"error", "\"edits\" must be a non-empty array"}};
    std::vector<std::pair<std::string, std::string>> asked;  // (old_text, new_text)
    for (size_t i = 0; i < list->size(); i++) {
        const Json& e = (*list)[i];
        const std::string where = "edit_file.params.edits[" + std::to_string(i) + "]";
        if (!e.is_object()) bad_request("%s must be an object {\"old_text\", \"new_text\"}", where.c_str());
        asked.emplace_back(need_string(e, "old_text", where), need_string(e, "new_text", where));
        if (asked.back().first.empty())
            return {{"error", "edits[" + std::to_string(i) + "].old_text must not be empty"}};
    }
    std::string original;
    if (!io.read(path, original)) return {{"error", "failed to open file: " + path}};

    const std::string norm = normalize(original);
    bool fuzzy = false;  // some old text is only found after normalizing: every edit is then matched in `norm`
    for (size_t i = 0; i < asked.size(); i++) {
        if (original.find(asked[i].first) != std::string::npos) continue;
        if (norm.find(normalize(asked[i].first)) == std::string::npos)
            return {{"error", fmt_index("could not find edits[%zu].old_text in ", i, path) +
                                  ", it must match the file's current content exactly"}};
        fuzzy = true;
    }
    const std::string& base = fuzzy ? norm : original;
    std::vector<Edit> edits;
    for (size_t i = 0; i < asked.size(); i++) {
        const std::string needle = fuzzy ? normalize(asked[i].first) : asked[i].first;
        // unique even after normalizing: a copy differing only in blanks or quotes is still a second one
        const size_t n = count_disjoint(norm, normalize(asked[i].first));
        if (n > 1) {
            char head[96];
            snprintf(head, sizeof head, "found %zu occurrences of edits[%zu].old_text in ", n, i);
            return {{"error", head + path + ", it must be unique"}};
        }
        const size_t at = base.find(needle);
        if (at == std::string::npos)
            return {{"error", fmt_index("could not find edits[%zu].old_text in ", i, path) +
                                  ", it must match the file's current content exactly"}};
        edits.push_back({i, at, needle.size(), asked[i].second});
    }
    std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.at < b.at; });
    for (size_t i = 1; i < edits.size(); i++) {
        if (edits[i - 1].at + edits[i - 1].len > edits[i].at) {
            char head[96];
            snprintf(head, sizeof head, "edits[%zu] and edits[%zu] overlap in ", edits[i - 1].index, edits[i].index);
            return {{"error", head + path + "; merge them into one edit or target disjoint regions"}};
        }
    }
    const std::string updated =
        fuzzy ? apply_keeping_lines(original, base, edits) : apply(original, 0, original.size(), edits);
    if (updated == original) return {{"error", "no changes made: the replacement(s) produced identical content"}};
    if (!io.write(path, updated)) return {{"error", "failed to write file: " + path}};
    return {{"result", "file edited successfully"}, {"path", path}, {"edits_applied", edits.size()}};
}

}  // namespace bee::server
