// server/tools_io: where the built-in agent tools (server/tools_builtin) read, write, list and run: this
// machine (paths resolved against the x-tool-cwd directory), or an isolate named by x-tool-runtime /
// --tools-runtime — a running docker or podman container (`<engine> exec`) or an ssh host — driven
// through POSIX commands (sh, cat, wc, mkdir, find, timeout) run there.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/subprocess.h"

namespace bee::server {

enum class ListKind { files, dirs, all };

struct ListEntry {
    std::string rel;  // '/'-separated, relative to the listed directory
    bool is_dir = false;
};

struct Listing {
    std::vector<ListEntry> entries;
    std::string err;         // set when the base is not a directory
    bool truncated = false;  // the walk ran out of time or met an unreadable directory
};

// Directories a listing shows but never walks into (they can be enormous).
extern const char* const kJunkDirs[13];

class ToolIo {
public:
    virtual ~ToolIo() = default;
    // `path` with a leading ~ expanded (this machine only) and made absolute against the call's cwd.
    virtual std::string resolve(const std::string& path) const = 0;
    virtual bool is_dir(const std::string& path) const = 0;
    virtual bool is_file(const std::string& path) const = 0;
    virtual bool file_size(const std::string& path, uint64_t& size) const = 0;
    virtual bool read(const std::string& path, std::string& out) const = 0;
    // Creates the parent directories too.
    virtual bool write(const std::string& path, const std::string& content) const = 0;
    // Entries under `base` (resolved); max_depth 0: no limit, 1: direct children only. Files come from
    // `git ls-files` (honouring .gitignore) when base is in a git work tree, else from a walk.
    virtual Listing list(const std::string& base, int max_depth, ListKind kind) const = 0;
    // Runs argv in the call's cwd; output is stdout and stderr merged.
    virtual RunResult run(const std::vector<std::string>& argv, size_t max_output, int timeout_s,
                          const std::function<bool(const std::string&)>& on_chunk = {}) const = 0;
    virtual bool isolated() const = 0;
};

// Globs: '*' and '?' stay within one path segment, "**" crosses '/', and "**/" also matches no directory
// at all; [abc], [a-z] and [!a-z] (or [^a-z]) are classes.
bool glob_match(const std::string& pattern, const std::string& path);
// llama-server's include/exclude rule: a pattern without '/' matches the basename at any depth; one with
// '/' the whole relative path, anchored at any depth ("**/" in front) unless it starts with "**" or '/'
// (a leading '/' anchors it at the searched directory).
bool path_glob_match(const std::string& pattern, const std::string& rel);

// The IO of one call: `runtime` empty is this machine; "docker-container:<id>", "podman-container:<id>"
// or "ssh:<target>" an isolate. Throws HttpError 500 (as llama-server) for an unknown scheme, an
// "<engine>:<image>" (only --tools-runtime may start a container), or an id / target that is not a plain
// name (one starting with '-' would become an option of docker, podman or ssh).
std::unique_ptr<ToolIo> make_tool_io(const std::string& cwd, const std::string& runtime);

// "docker:<image>" / "podman:<image>": sets engine and image (the --tools-runtime that starts a container).
bool parse_container_image_spec(const std::string& spec, std::string& engine, std::string& image);

}  // namespace bee::server
