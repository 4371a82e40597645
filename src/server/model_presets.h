// server/model_presets: where router mode finds its models — a --models-dir folder (a GGUF per model,
// or a sub-folder per model) and a --models-preset INI file in llama-server's format — and the
// `bee serve` flags each model gets from them.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bee::server {

// Whether `flag` ("-c", "--ctx-size") is one of `bee serve`'s, and whether it takes a value.
using FlagLookup = std::function<bool(const std::string& flag, bool* takes_value)>;

struct ModelSpec {
    std::string name;
    std::string source;                // "models_dir" or "preset" (as llama-server reports it)
    std::vector<std::string> args;     // bee serve flags: the folder's -m PATH, then [*]'s keys, then its section's
    std::vector<std::string> aliases;  // other names that route to it (the preset's `alias`, comma list)
    std::vector<std::string> tags;     // informational (the preset's `tags`, comma list)
    std::string preset;                // its options as INI text: "[name]\nkey = value\n..."
    bool load_on_startup = false;      // the preset's `load-on-startup`
};

// One [section] of a preset file: its keys in file order (keys before any header: section "default").
struct IniSection {
    std::string name;
    std::vector<std::pair<std::string, std::string>> keys;
};
// llama-server's preset grammar: `[name]` headers, `key = value` lines (key: [A-Za-z_][A-Za-z0-9_.-]*),
// comments from `;` or `#` to the end of the line, blank lines. Throws Error naming `path` and the line.
std::vector<IniSection> parse_preset_ini(const std::string& text, const std::string& path);

// "true"/"on"/"enabled"/"1" and "false"/"off"/"disabled"/"0", as llama-server reads preset booleans.
// "a, b,,c" -> {"a", "b", "c"}: a comma list with the blanks around items and the empty items dropped;
// trim false keeps each item's bytes as given (API keys are compared byte for byte).
std::vector<std::string> split_list(const std::string& s, bool trim = true);
bool is_truthy(const std::string& v);
bool is_falsey(const std::string& v);

// The models of a folder and a preset file (either may be empty), sorted by name; a preset section named
// like one of the folder's models adds its options to it. Throws Error naming the file, section or key
// at fault (an unknown key, a section without a model file, duplicate names and aliases).
std::vector<ModelSpec> collect_model_specs(const std::string& models_dir, const std::string& preset_file,
                                           const FlagLookup& has_flag);

}  // namespace bee::server
