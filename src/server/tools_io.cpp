// server/tools_io: the local and the isolate (container exec, ssh) implementations of ToolIo.
#include "server/tools_io.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/http_util.h"

namespace bee::server {

namespace fs = std::filesystem;

const char* const kJunkDirs[13] = {".git", ".svn",  ".hg",    "node_modules", "__pycache__", ".venv",  "venv",
                                   "dist", "build", "target", ".cache",       ".idea",       ".vscode"};

namespace {

constexpr size_t kListMaxOutput = 8u << 20;  // git ls-files / find output
constexpr int kListTimeoutS = 15;            // one listing, git and walk together
constexpr int kIsolateTimeoutS = 15;         // the isolate's helper commands (test, cat, wc, ...)
constexpr size_t kIsolateReadMax = 64u << 20;

bool is_junk(const std::string& name) {
    return std::find_if(std::begin(kJunkDirs), std::end(kJunkDirs), [&](const char* j) { return name == j; }) !=
           std::end(kJunkDirs);
}

int depth_of(const std::string& rel) { return 1 + (int)std::count(rel.begin(), rel.end(), '/'); }

std::vector<std::string> lines_of(const std::string& text, bool strip_dot_slash) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (strip_dot_slash && line.rfind("./", 0) == 0) line = line.substr(2);
        if (!line.empty()) out.push_back(line);
    }
    return out;
}

// This machine: std::filesystem, and processes started in the call's cwd.
class LocalIo : public ToolIo {
public:
    explicit LocalIo(std::string cwd) : cwd_(std::move(cwd)) {}

    std::string resolve(const std::string& path) const override {
        std::string p = path;
        const char* home = getenv("HOME");
        if (home && *home && !p.empty() && p[0] == '~' && (p.size() == 1 || p[1] == '/')) p = home + p.substr(1);
        fs::path full(p);
        if (!full.is_absolute()) {
            std::error_code ec;
            full = (cwd_.empty() ? fs::current_path(ec) : fs::path(cwd_)) / full;
        }
        full = full.lexically_normal();
        if (!full.has_filename() && full != full.root_path()) full = full.parent_path();  // "a/.." ends in '/'
        return full.generic_string();
    }
    bool is_dir(const std::string& path) const override {
        std::error_code ec;
        return fs::is_directory(resolve(path), ec);
    }
    bool is_file(const std::string& path) const override {
        std::error_code ec;
        return fs::is_regular_file(resolve(path), ec);
    }
    bool file_size(const std::string& path, uint64_t& size) const override {
        std::error_code ec;
        size = fs::file_size(resolve(path), ec);
        return !ec;
    }
    bool read(const std::string& path, std::string& out) const override {
        std::ifstream f(resolve(path), std::ios::binary);
        if (!f) return false;
        std::ostringstream ss;
        ss << f.rdbuf();
        out = ss.str();
        return true;
    }
    bool write(const std::string& path, const std::string& content) const override {
        const fs::path p = resolve(path);
        std::error_code ec;
        if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
        if (ec) return false;
        std::ofstream f(p, std::ios::binary);
        return f && (f << content) && f.flush();
    }
    Listing list(const std::string& base, int max_depth, ListKind kind) const override {
        Listing out;
        std::error_code ec;
        if (!fs::is_directory(base, ec)) {
            out.err = "path does not exist or is not a directory";
            return out;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kListTimeoutS);
        if (kind == ListKind::files) {  // git cannot list directories
            RunOptions o;
            o.max_output = kListMaxOutput;
            o.timeout_s = kListTimeoutS;
            o.merge_stderr = false;
            const RunResult r =
                run_process({"git", "-C", base, "ls-files", "--cached", "--others", "--exclude-standard"}, o);
            if (r.exit_code == 0 && !r.timed_out) {
                for (const std::string& rel : lines_of(r.output, false))
                    if ((max_depth == 0 || depth_of(rel) <= max_depth) && fs::is_regular_file(base + "/" + rel, ec))
                        out.entries.push_back({rel, false});  // --cached also lists deleted files
                return out;
            }
        }
        walk(base, max_depth, kind, deadline, out);
        return out;
    }
    RunResult run(const std::vector<std::string>& argv, size_t max_output, int timeout_s,
                  const std::function<bool(const std::string&)>& on_chunk) const override {
        RunOptions o;
        o.max_output = max_output;
        o.timeout_s = timeout_s;
        o.cwd = cwd_;
        o.on_chunk = on_chunk;
        return run_process(argv, o);
    }
    bool isolated() const override { return false; }

private:
    std::string cwd_;

    // Depth-first, never into a junk directory or through a symlink (a link can loop back).
    static void walk(const std::string& base, int max_depth, ListKind kind,
                     std::chrono::steady_clock::time_point deadline, Listing& out) {
        struct Dir {
            fs::path path;
            std::string rel;
            int depth;
        };
        std::vector<Dir> stack{{fs::path(base), "", 0}};
        while (!stack.empty()) {
            Dir d = std::move(stack.back());
            stack.pop_back();
            std::error_code ec;
            fs::directory_iterator it(d.path, fs::directory_options::skip_permission_denied, ec);
            if (ec) {
                out.truncated = true;
                continue;
            }
            for (const fs::directory_iterator end; it != end; it.increment(ec)) {
                if (ec || std::chrono::steady_clock::now() >= deadline) {
                    out.truncated = true;
                    if (!ec) return;
                    break;
                }
                const std::string name = it->path().filename().string();
                const std::string rel = d.rel.empty() ? name : d.rel + "/" + name;
                std::error_code tec;
                if (it->is_directory(tec)) {
                    if (kind != ListKind::files) out.entries.push_back({rel, true});
                    if (!is_junk(name) && !it->is_symlink(tec) && (max_depth == 0 || d.depth + 1 < max_depth))
                        stack.push_back({it->path(), rel, d.depth + 1});
                } else if (it->is_regular_file(tec) && kind != ListKind::dirs) {
                    out.entries.push_back({rel, false});
                }
            }
        }
    }
};

// One word a POSIX shell parses back into `s`.
std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// Every operation as a command run in the isolate; paths there are POSIX and not resolved here
// beyond joining a relative one to the cwd.
class IsolateIo : public ToolIo {
public:
    explicit IsolateIo(std::string cwd) : cwd_(std::move(cwd)) {}

    std::string resolve(const std::string& path) const override {
        return cwd_.empty() || (!path.empty() && path[0] == '/') ? path : cwd_ + "/" + path;
    }
    bool is_dir(const std::string& path) const override { return ok({"test", "-d", resolve(path)}); }
    bool is_file(const std::string& path) const override { return ok({"test", "-f", resolve(path)}); }
    bool file_size(const std::string& path, uint64_t& size) const override {
        const RunResult r = exec({"sh", "-c", "wc -c < \"$1\"", "_", resolve(path)}, 64, true);
        if (r.exit_code != 0 || r.timed_out) return false;
        char* end = nullptr;
        size = strtoull(r.output.c_str(), &end, 10);
        return end != r.output.c_str();
    }
    bool read(const std::string& path, std::string& out) const override {
        const RunResult r = exec({"cat", "--", resolve(path)}, kIsolateReadMax, false);
        if (r.exit_code != 0 || r.timed_out) return false;
        out = r.output;
        return true;
    }
    bool write(const std::string& path, const std::string& content) const override {
        RunOptions o;
        o.max_output = 4096;
        o.timeout_s = kIsolateTimeoutS;
        o.input = &content;  // on stdin: nothing for the far side to re-parse
        const RunResult r =
            run_process(wrap({"sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"", "_", resolve(path)}, true),
                        o);
        return r.exit_code == 0 && !r.timed_out;
    }
    Listing list(const std::string& base, int max_depth, ListKind kind) const override {
        Listing out;
        const std::string abs = resolve(base);
        if (!is_dir(abs)) {
            out.err = "path does not exist or is not a directory";
            return out;
        }
        if (kind == ListKind::files) {
            const RunResult r =
                exec({"sh", "-c", "cd \"$1\" && git ls-files --cached --others --exclude-standard", "_", abs},
                     kListMaxOutput, false);
            if (r.exit_code == 0 && !r.timed_out) {
                for (const std::string& rel : lines_of(r.output, false))
                    if (max_depth == 0 || depth_of(rel) <= max_depth) out.entries.push_back({rel, false});
                return out;
            }
        }
        if (kind != ListKind::files)
            for (std::string& rel : find(abs, max_depth, true, out.truncated)) out.entries.push_back({rel, true});
        if (kind != ListKind::dirs)
            for (std::string& rel : find(abs, max_depth, false, out.truncated)) out.entries.push_back({rel, false});
        return out;
    }
    // Wrapped in the isolate's own `timeout`: killing the local client does not stop what runs there.
    RunResult run(const std::vector<std::string>& argv, size_t max_output, int timeout_s,
                  const std::function<bool(const std::string&)>& on_chunk) const override {
        std::vector<std::string> inner;
        if (!cwd_.empty()) inner = {"sh", "-c", "cd \"$1\" || exit 127; shift; exec \"$@\"", "_", cwd_};
        inner.push_back("timeout");
        inner.push_back(std::to_string(timeout_s) + "s");
        inner.insert(inner.end(), argv.begin(), argv.end());
        RunOptions o;
        o.max_output = max_output;
        o.timeout_s = timeout_s + 5;  // room for the inner timeout to end it cleanly
        o.on_chunk = on_chunk;
        return run_process(wrap(inner, true), o);
    }
    bool isolated() const override { return true; }

protected:
    // The local argv that runs `inner` (a complete POSIX argv) in the isolate.
    virtual std::vector<std::string> wrap(const std::vector<std::string>& inner, bool needs_stdin) const = 0;

private:
    std::string cwd_;

    RunResult exec(const std::vector<std::string>& inner, size_t max_output, bool merge_stderr) const {
        RunOptions o;
        o.max_output = max_output;
        o.timeout_s = kIsolateTimeoutS;
        o.merge_stderr = merge_stderr;
        return run_process(wrap(inner, false), o);
    }
    bool ok(const std::vector<std::string>& inner) const {
        const RunResult r = exec(inner, 4096, true);
        return r.exit_code == 0 && !r.timed_out;
    }
    // One `find` pass; junk directories are listed but pruned. -mindepth/-maxdepth work in busybox too.
    std::vector<std::string> find(const std::string& abs, int max_depth, bool dirs, bool& truncated) const {
        std::string prune;
        for (const char* j : kJunkDirs) prune += std::string(prune.empty() ? "" : " -o ") + "-name " + j;
        std::string cmd = "cd \"$1\" && find . -mindepth 1";
        if (max_depth > 0) cmd += " -maxdepth " + std::to_string(max_depth);
        cmd += " \\( " + prune + " \\) -prune";
        cmd += dirs ? " -print -o -type d -print" : " -o -type f -print";
        const RunResult r = exec({"sh", "-c", cmd, "_", abs}, kListMaxOutput, false);
        truncated = truncated || r.timed_out;
        return lines_of(r.output, true);
    }
};

// A running container: `<engine> exec [-i] <id> argv...` (docker and podman take the same verbs).
class ContainerIo : public IsolateIo {
public:
    ContainerIo(std::string engine, std::string id, std::string cwd)
        : IsolateIo(std::move(cwd)), engine_(std::move(engine)), id_(std::move(id)) {}

protected:
    std::vector<std::string> wrap(const std::vector<std::string>& inner, bool needs_stdin) const override {
        std::vector<std::string> argv = {engine_, "exec"};
        if (needs_stdin) argv.push_back("-i");
        argv.push_back(id_);
        argv.insert(argv.end(), inner.begin(), inner.end());
        return argv;
    }

private:
    std::string engine_, id_;
};

// A remote host over ssh: remoting, not isolation (the tools can do what the account can). Key-based
// auth and a known host key only: there is no console to answer a prompt.
class SshIo : public IsolateIo {
public:
    SshIo(std::string target, std::string cwd) : IsolateIo(std::move(cwd)), target_(std::move(target)) {}

protected:
    std::vector<std::string> wrap(const std::vector<std::string>& inner, bool needs_stdin) const override {
        std::vector<std::string> argv = {"ssh",
                                         "-o",
                                         "BatchMode=yes",
                                         "-o",
                                         "PasswordAuthentication=no",
                                         "-o",
                                         "KbdInteractiveAuthentication=no",
                                         "-o",
                                         "StrictHostKeyChecking=yes"};
        if (!needs_stdin) argv.push_back("-n");
        argv.push_back(target_);
        std::string cmd;  // the remote shell re-parses the command: one quoted word per argument
        for (const std::string& a : inner) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
        argv.push_back(cmd);
        return argv;
    }

private:
    std::string target_;
};

bool plain_name(const std::string& s, const char* extra) {
    if (s.empty() || !isalnum((unsigned char)s[0])) return false;
    return std::all_of(s.begin(), s.end(), [&](char c) { return isalnum((unsigned char)c) || strchr(extra, c); });
}

[[noreturn]] void runtime_error(const std::string& msg) { throw HttpError(500, "server_error", msg); }

}  // namespace

namespace {

bool class_match(const char*& p, char c) {  // p at '['; moves p past ']' (false: no ']', not a class)
    const char* q = p + 1;
    const bool negate = *q == '!' || *q == '^';
    if (negate) q++;
    bool hit = false;
    for (bool first = true; *q && (first || *q != ']'); first = false) {
        if (q[1] == '-' && q[2] && q[2] != ']') {
            hit = hit || (c >= q[0] && c <= q[2]);
            q += 3;
        } else {
            hit = hit || c == *q;
            q++;
        }
    }
    if (*q != ']') return false;
    p = q + 1;
    return hit != negate;
}

bool glob_at(const char* p, const char* s, int& budget) {
    if (--budget < 0) return false;  // a pathological pattern: no match rather than exponential time
    for (;; p++, s++) {
        if (p[0] == '*' && p[1] == '*') {
            const char* rest = p + 2;
            if (*rest == '/' && glob_at(rest + 1, s, budget)) return true;  // "**/": no directory at all
            for (const char* t = s;; t++) {
                if (glob_at(rest, t, budget)) return true;
                if (!*t) return false;
            }
        }
        if (*p == '*') {
            for (const char* t = s;; t++) {
                if (glob_at(p + 1, t, budget)) return true;
                if (!*t || *t == '/') return false;
            }
        }
        if (!*p) return !*s;
        if (!*s) return false;
        if (*p == '?') {
            if (*s == '/') return false;
            continue;
        }
        if (*p == '[') {
            const char* q = p;
            if (class_match(q, *s)) {
                if (*s == '/') return false;
                p = q - 1;
                continue;
            }
            if (q != p) return false;  // a class that did not match
        }
        if (*p != *s) return false;
    }
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& path) {
    int budget = 1 << 20;
    return glob_at(pattern.c_str(), path.c_str(), budget);
}

bool path_glob_match(const std::string& pattern, const std::string& rel) {
    if (pattern.find('/') == std::string::npos) {
        const size_t slash = rel.rfind('/');
        return glob_match(pattern, slash == std::string::npos ? rel : rel.substr(slash + 1));
    }
    if (pattern[0] == '/') return glob_match(pattern.substr(1), rel);
    if (pattern.rfind("**", 0) == 0) return glob_match(pattern, rel);
    return glob_match("**/" + pattern, rel);
}

bool parse_container_image_spec(const std::string& spec, std::string& engine, std::string& image) {
    for (const char* e : {"docker", "podman"}) {
        const std::string prefix = std::string(e) + ":";
        if (spec.rfind(prefix, 0) == 0) {
            engine = e;
            image = spec.substr(prefix.size());
            return true;
        }
    }
    return false;
}

std::unique_ptr<ToolIo> make_tool_io(const std::string& cwd, const std::string& runtime) {
    if (runtime.empty()) return std::make_unique<LocalIo>(cwd);
    for (const char* e : {"docker", "podman"}) {
        const std::string attach = std::string(e) + "-container:";
        if (runtime.rfind(attach, 0) == 0) {
            const std::string id = runtime.substr(attach.size());
            if (!plain_name(id, "._-"))
                runtime_error("invalid container id: " + id +
                              " (letters, digits, '.', '_' and '-', starting with a letter or digit)");
            return std::make_unique<ContainerIo>(e, id, cwd);
        }
    }
    std::string engine, image;
    if (parse_container_image_spec(runtime, engine, image))
        runtime_error("tool runtime must name a running container: " + runtime + " (use " + engine +
                      "-container:<id>; only --tools-runtime starts a container from an image)");
    if (runtime.rfind("ssh:", 0) == 0) {
        const std::string target = runtime.substr(4);
        if (!plain_name(target, "._-@"))
            runtime_error("invalid ssh target: " + target +
                          " (user@host: letters, digits, '.', '_', '-' and '@', not starting with '-')");
        return std::make_unique<SshIo>(target, cwd);
    }
    runtime_error("unknown tool runtime: " + runtime +
                  " (expected docker-container:<id>, podman-container:<id> or ssh:<target>)");
}

}  // namespace bee::server
