// server/tools_builtin: the built-in agent tools — their definitions, limits and answers (llama-server's
// shapes and messages), and the provider that runs each call through a ToolIo.
#include "server/tools_builtin.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "server/subprocess.h"

namespace bee::server {

namespace {

constexpr size_t kReadMax = 16 * 1024;             // read_file: text answer
constexpr size_t kReadMaxBase64 = 32u << 20;       // read_file with x-resp-type: base64
constexpr int64_t kSearchMaxResults = 100;         // file_glob_search
constexpr size_t kGrepMaxMatches = 100;            // grep_search
constexpr uint64_t kGrepMaxFileBytes = 32u << 20;  // grep_search skips larger files (models, dumps)
constexpr size_t kGrepMaxLineBytes = 4096;         // grep_search matches and shows this much of a line
constexpr size_t kGrepStackBytes = 256u << 20;     // grep_search's thread (reserved, touched as needed)
constexpr size_t kExecMaxOutput = 16 * 1024;       // exec_shell_command
constexpr int64_t kExecMaxTimeoutS = 60;           // exec_shell_command
constexpr size_t kInfoMaxOutput = 4096;            // get_info
constexpr int kInfoTimeoutS = 5;                   // get_info

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

Json error(const std::string& msg) { return {{"error", msg}}; }

// A pattern longer than this is refused: glob matching and std::regex recurse per pattern element.
constexpr size_t kMaxPatternBytes = 4096;

std::string too_long(const std::string& include, const std::string& exclude, const std::string* regex = nullptr) {
    for (const auto& [name, v] :
         {std::pair<const char*, const std::string*>{"include", &include}, {"exclude", &exclude}, {"pattern", regex}})
        if (v && v->size() > kMaxPatternBytes)
            return fmt("%s is too long (%zu bytes, max %zu)", name, v->size(), kMaxPatternBytes);
    return "";
}

std::string need(const Json& p, const char* key, const char* tool) {
    return need_string(p, key, std::string(tool) + ".params");
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// ---- read_file ----

Json read_file(const Json& p, ToolIo& io, const ToolCall& how) {
    const std::string path = need(p, "path", "read_file");
    const int64_t start_line = get_int(p, "start_line", 1);
    const int64_t end_line = get_int(p, "end_line", -1);  // -1: to the end
    const bool append_loc = get_bool(p, "append_loc", false);
    uint64_t size = 0;
    if (!io.file_size(path, size)) return error("cannot stat file: " + path);
    std::string content;
    if (how.resp_type == "base64") {  // the client's x-resp-type, never the model's choice
        if (size > kReadMaxBase64)
            return error(fmt("file too large (%zu bytes, max %zu)", (size_t)size, kReadMaxBase64));
        if (!io.read(path, content)) return error("failed to open file: " + path);
        return {{"base64", base64_encode((const uint8_t*)content.data(), content.size())},
                {"size_bytes", content.size()}};
    }
    if (size > kReadMax && end_line == -1)
        return error(fmt("file too large (%zu bytes, max %zu). Use start_line/end_line to read a portion.",
                         (size_t)size, kReadMax));
    if (!io.read(path, content)) return error("failed to open file: " + path);
    std::istringstream in(content);
    std::string line, out;
    for (int64_t n = 1; std::getline(in, line); n++) {
        if (n < start_line) continue;
        if (end_line != -1 && n > end_line) break;
        const std::string piece = (append_loc ? std::to_string(n) + "\u2192" : "") + line + "\n";
        if (out.size() + piece.size() > kReadMax) {
            out += "[output truncated]";
            break;
        }
        out += piece;
    }
    return {{"plain_text_response", out}};
}

// ---- file_glob_search ----

Json file_glob_search(const Json& p, ToolIo& io, const ToolCall&) {
    const std::string path = need(p, "path", "file_glob_search");
    const std::string include = get_string(p, "include", "**"), exclude = get_string(p, "exclude", "");
    if (const std::string e = too_long(include, exclude); !e.empty()) return error(e);
    const std::string type = get_string(p, "type", "file");
    const int max_depth = (int)std::clamp<int64_t>(get_int(p, "max_depth", 0), 0, 1 << 20);
    const int64_t limit = get_int(p, "limit", kSearchMaxResults);
    if (limit < 1) return error(fmt("invalid limit: %lld (expected 1 or more)", (long long)limit));
    ListKind kind = ListKind::files;
    if (type == "dir") kind = ListKind::dirs;
    else if (type == "all") kind = ListKind::all;
    else if (type != "file") return error("invalid type: " + type + " (expected \"file\", \"dir\" or \"all\")");

    const std::string base = io.resolve(path);
    const Listing listing = io.list(base, max_depth, kind);
    if (!listing.err.empty()) return error(listing.err + ": " + path);
    std::vector<const ListEntry*> hits;
    for (const ListEntry& e : listing.entries)
        if (path_glob_match(include, e.rel) && (exclude.empty() || !path_glob_match(exclude, e.rel)))
            hits.push_back(&e);
    const size_t shown = std::min(hits.size(), (size_t)std::min(limit, kSearchMaxResults));
    std::string text;
    Json entries = Json::array();
    for (size_t i = 0; i < shown; i++) {
        text += hits[i]->rel + (hits[i]->is_dir ? "/\n" : "\n");
        entries.push_back({{"path", hits[i]->rel}, {"type", hits[i]->is_dir ? "dir" : "file"}});
    }
    text += fmt("\n---\nTotal matches: %zu\n", hits.size());
    if (hits.size() > shown)
        text += fmt("[%zu results limit reached (%zu total matches). Refine the glob pattern to narrow the search.]\n",
                    shown, hits.size());
    if (listing.truncated) text += "[results truncated: time budget or unreadable directory]\n";
    // `base` is absolute, so a client (the chat page's picker) can join it with the entries.
    return {{"plain_text_response", text}, {"entries", entries}, {"base", base}};
}

// ---- grep_search ----

std::regex grep_regex(const std::string& pattern, bool literal, bool ignore_case) {
    std::string src;
    if (literal) {
        for (char c : pattern) {
            if (strchr("\\^$.|?*+()[]{}", c)) src += '\\';
            src += c;
        }
    }
    auto flags = std::regex::ECMAScript;
    if (ignore_case) flags |= std::regex::icase;
    return std::regex(literal ? src : pattern, flags);
}

// Runs fn on a thread with a kGrepStackBytes stack: std::regex recurses once per character for patterns
// like ".*x" or "(a|b)*c" and overflows an 8 MiB stack within 20,000 characters of a line.
Json on_big_stack(const std::function<Json()>& fn) {
    struct Job {
        const std::function<Json()>* fn;
        Json out;
        std::exception_ptr err;
    } job{&fn, Json(), nullptr};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, kGrepStackBytes);
    pthread_t t;
    const int rc = pthread_create(
        &t, &attr,
        [](void* arg) -> void* {
            Job* j = (Job*)arg;
            try {
                j->out = (*j->fn)();
            } catch (...) {
                j->err = std::current_exception();
            }
            return nullptr;
        },
        &job);
    pthread_attr_destroy(&attr);
    if (rc != 0) throw HttpError(500, "server_error", "grep_search: cannot start its thread");
    pthread_join(t, nullptr);
    if (job.err) std::rethrow_exception(job.err);
    return job.out;
}

Json grep_search_lines(const Json& p, ToolIo& io);

Json grep_search(const Json& p, ToolIo& io, const ToolCall&) {
    return on_big_stack([&] { return grep_search_lines(p, io); });
}

Json grep_search_lines(const Json& p, ToolIo& io) {
    const std::string path = need(p, "path", "grep_search"), pattern = need(p, "pattern", "grep_search");
    const std::string include = get_string(p, "include", "**"), exclude = get_string(p, "exclude", "");
    const int64_t ctx = std::clamp<int64_t>(get_int(p, "context_lines", 0), 0, 1000);
    const bool numbers = get_bool(p, "return_line_numbers", false) || ctx > 0;
    if (const std::string e = too_long(include, exclude, &pattern); !e.empty()) return error(e);
    std::regex re;
    try {
        re = grep_regex(pattern, get_bool(p, "literal", false), get_bool(p, "ignore_case", false));
    } catch (const std::regex_error& e) {
        return error(std::string("invalid regex: ") + e.what());
    }
    std::vector<std::pair<std::string, std::string>> files;  // (absolute path, the path shown)
    const std::string abs = io.resolve(path);
    if (io.is_file(abs)) {
        files.emplace_back(abs, path);
    } else if (io.is_dir(abs)) {
        const Listing listing = io.list(abs, 0, ListKind::files);
        if (!listing.err.empty()) return error(listing.err + ": " + path);
        for (const ListEntry& e : listing.entries)
            if (path_glob_match(include, e.rel) && (exclude.empty() || !path_glob_match(exclude, e.rel)))
                files.emplace_back(abs + "/" + e.rel, e.rel);
    } else {
        return error("path does not exist: " + path);
    }
    std::ostringstream out;
    size_t total = 0;
    bool full = false;
    size_t skipped = 0;
    for (const auto& [file, shown] : files) {
        std::string content;
        uint64_t size = 0;
        if (full) break;
        if (!io.isolated() && io.file_size(file, size) && size > kGrepMaxFileBytes) {
            skipped++;
            continue;
        }
        if (!io.read(file, content)) continue;
        std::vector<std::string> lines;
        std::istringstream in(content);
        for (std::string line; std::getline(in, line);) {
            if (line.size() > kGrepMaxLineBytes) line.resize(kGrepMaxLineBytes);
            lines.push_back(std::move(line));
        }
        for (size_t i = 0; i < lines.size(); i++) {
            if (total >= kGrepMaxMatches) {
                full = true;
                break;
            }
            if (!std::regex_search(lines[i], re)) continue;
            const size_t lo = i - std::min<size_t>(i, (size_t)ctx), hi = std::min(lines.size() - 1, i + (size_t)ctx);
            for (size_t j = lo; j <= hi; j++) {
                const char sep = j == i ? ':' : '-';
                out << shown << sep;
                if (numbers) out << j + 1 << sep;
                out << lines[j] << "\n";
            }
            if (ctx > 0) out << "--\n";
            total++;
        }
    }
    out << "\n---\nTotal matches: " << total << "\n";
    if (full)
        out << fmt("[%zu matches limit reached. Narrow the path/pattern/include to see more.]\n", kGrepMaxMatches);
    if (skipped > 0)
        out << fmt("[%zu files over %llu MiB not searched]\n", skipped, (unsigned long long)(kGrepMaxFileBytes >> 20));
    return {{"plain_text_response", out.str()}};
}

// ---- exec_shell_command ----

// The length of `s` without a UTF-8 sequence cut short at its end (a pipe read can split a character:
// the rest comes with the next chunk, and each SSE event stays valid UTF-8).
size_t complete_utf8_length(const std::string& s) {
    size_t i = s.size();
    for (int k = 0; k < 3 && i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80; k++) i--;
    if (i == 0) return s.size();
    const unsigned char lead = (unsigned char)s[i - 1];
    const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return need > 1 && s.size() - (i - 1) < need ? i - 1 : s.size();
}

Json exec_shell_command(const Json& p, ToolIo& io, const ToolCall& how) {
    const std::string command = need(p, "command", "exec_shell_command");
    const int timeout = (int)std::clamp<int64_t>(get_int(p, "timeout", 10), 1, kExecMaxTimeoutS);
    const size_t max_output =
        (size_t)std::clamp<int64_t>(get_int(p, "max_output_size", kExecMaxOutput), 0, kExecMaxOutput);
    const std::vector<std::string> argv = {"sh", "-c", command};
    if (how.emit) {  // stream: output as it comes, then the exit code
        bool client_left = false;
        std::string pending;  // the start of a character split by a read
        const RunResult r = io.run(argv, max_output, timeout, [&](const std::string& chunk) {
            pending += chunk;
            const size_t n = complete_utf8_length(pending);
            client_left = client_left || (n > 0 && !how.emit(pending.substr(0, n)));
            pending.erase(0, n);
            return !client_left;
        });
        if (client_left) return Json();
        how.emit(pending + fmt("\n[exit code: %d]", r.exit_code) + (r.timed_out ? " [exit due to timed out]" : ""));
        return Json();
    }
    const RunResult r = io.run(argv, max_output, timeout);
    return {{"plain_text_response",
             r.output + fmt("\n[exit code: %d]", r.exit_code) + (r.timed_out ? " [exit due to timed out]" : "")}};
}

// ---- write_file, edit_file ----

Json write_file(const Json& p, ToolIo& io, const ToolCall&) {
    const std::string path = need(p, "path", "write_file"), content = need(p, "content", "write_file");
    if (!io.write(path, content)) return error("failed to write file: " + path);
    return {{"result", "file written successfully"}, {"path", path}, {"bytes", content.size()}};
}

Json edit_file_tool(const Json& p, ToolIo& io, const ToolCall&) { return edit_file(p, io); }

// ---- get_info ----

Json get_info(const Json&, ToolIo& io, const ToolCall& how) {
    const RunResult os = io.run({"uname", "-a"}, kInfoMaxOutput, kInfoTimeoutS);
    std::string cwd = how.cwd;
    if (cwd.empty() && !io.isolated()) {
        std::error_code ec;
        cwd = std::filesystem::current_path(ec).string();
    } else if (cwd.empty()) {
        const RunResult pwd = io.run({"pwd"}, kInfoMaxOutput, kInfoTimeoutS);
        cwd = pwd.exit_code == 0 && !pwd.timed_out ? trim(pwd.output) : "unknown";
    }
    return {{"os", os.exit_code == 0 && !os.timed_out ? trim(os.output) : "unknown"}, {"cwd", cwd}};
}

// ---- the table ----

struct BuiltinTool {
    const char* name;
    const char* display_name;
    bool write;   // permissions.write: it changes files or runs commands
    bool stream;  // answers "stream": true
    Json (*invoke)(const Json& params, ToolIo& io, const ToolCall& how);
    Json (*parameters)();
    const char* description;
};

Json prop(const char* type, const std::string& desc) { return {{"type", type}, {"description", desc}}; }

Json object_schema(Json props, std::vector<std::string> required) {
    Json s = {{"type", "object"}, {"properties", std::move(props)}};
    if (!required.empty()) s["required"] = required;
    return s;
}

Json read_file_params() {
    return object_schema({{"path", prop("string", "File to read")},
                          {"start_line", prop("integer", "First line to return, counted from 1 (default 1)")},
                          {"end_line", prop("integer", "Last line to return, inclusive (default: the last line)")},
                          {"append_loc", prop("boolean", "Put each line's number in front of it")}},
                         {"path"});
}

Json file_glob_search_params() {
    return object_schema(
        {{"path", prop("string", "Directory to search under")},
         {"include", prop("string", "Glob of the entries to return, e.g. \"*.cpp\" or \"src/**/*.h\" (default **)")},
         {"exclude", prop("string", "Glob of the entries to leave out")},
         {"type", prop("string", "\"file\" (default), \"dir\" or \"all\"")},
         {"max_depth", prop("integer", "How deep to look: 0 no limit (default), 1 the directory's own entries")},
         {"limit", prop("integer", fmt("Most results to return, at most %lld (default %lld)",
                                       (long long)kSearchMaxResults, (long long)kSearchMaxResults))}},
        {"path"});
}

Json grep_search_params() {
    return object_schema(
        {{"path", prop("string", "File or directory to search")},
         {"pattern", prop("string", "Regular expression (ECMAScript) to look for, or a plain string with literal")},
         {"include", prop("string", "Glob of the files to search (default **)")},
         {"exclude", prop("string", "Glob of the files to skip")},
         {"return_line_numbers", prop("boolean", "Show the line number of each match")},
         {"literal", prop("boolean", "Take pattern as plain text, not a regular expression (default false)")},
         {"ignore_case", prop("boolean", "Match regardless of case (default false)")},
         {"context_lines", prop("integer", "Lines shown before and after each match (default 0)")}},
        {"path", "pattern"});
}

Json exec_shell_command_params() {
    return object_schema({{"command", prop("string", "Command line for sh -c")},
                          {"timeout", prop("integer", fmt("Seconds before it is killed (default 10, at most %lld)",
                                                          (long long)kExecMaxTimeoutS))},
                          {"max_output_size",
                           prop("integer",
                                fmt("Most bytes of output returned (default and most %zu)", kExecMaxOutput))}},
                         {"command"});
}

Json write_file_params() {
    return object_schema({{"path", prop("string", "File to write")},
                          {"content", prop("string", "The file's new content")}},
                         {"path", "content"});
}

Json edit_file_params() {
    Json edit =
        object_schema({{"old_text",
                        prop("string", "Text of the file to replace: exact, found once, not overlapping another edit")},
                       {"new_text", prop("string", "Text to put in its place")}},
                      {"old_text", "new_text"});
    Json edits = {{"type", "array"}, {"description", "The replacements, at least one"}, {"items", edit}};
    return object_schema({{"path", prop("string", "File to edit")}, {"edits", edits}}, {"path", "edits"});
}

Json get_info_params() { return object_schema(Json::object(), {}); }

const BuiltinTool kTools[] = {
    {"read_file", "Read file", false, false, read_file, read_file_params,
     "Read a text file, or the lines start_line to end_line of it (counted from 1). With append_loc each line "
     "starts with its number and an arrow (\"12\u2192...\")."},
    {"file_glob_search", "File search", false, false, file_glob_search, file_glob_search_params,
     "Find files (or, with type \"dir\" / \"all\", directories) under a directory whose paths match a glob. "
     "Files ignored by git (.gitignore) are skipped inside a git work tree; directories such as .git, "
     "node_modules, build and dist are never searched. A glob without '/' matches the file name at any depth; "
     "one with '/' matches the path relative to the directory, at any depth unless it starts with \"**\" or '/'. "
     "Directories are listed with a trailing '/' and are not filtered by .gitignore."},
    {"grep_search", "Grep search", false, false, grep_search, grep_search_params,
     "Search the lines of a file, or of the files under a directory, for a regular expression; each match is "
     "shown as path:line (paths relative to the directory). Files ignored by git and directories such as .git, "
     "node_modules, build and dist are skipped. include/exclude globs follow file_glob_search's rule."},
    {"exec_shell_command", "Execute shell command", true, true, exec_shell_command, exec_shell_command_params,
     "Run a shell command and return what it printed (stdout and stderr together) and its exit code."},
    {"write_file", "Write file", true, false, write_file, write_file_params,
     "Write a file, replacing it if it exists and creating missing parent directories. Use edit_file to change "
     "part of a file."},
    {"edit_file", "Edit file", true, false, edit_file_tool, edit_file_params,
     "Change a file by replacing exact pieces of text. Each old_text must occur exactly once in the file as it "
     "is now (edits do not see each other's results) and edits must not overlap: merge neighbouring changes "
     "into one edit. Use write_file to replace the whole file."},
    {"get_info", "Get Runtime Info", false, false, get_info, get_info_params,
     "Tell the operating system (name and version) and the working directory the tools run in."},
};

const BuiltinTool* find_tool(const std::string& name) {
    for (const BuiltinTool& t : kTools)
        if (name == t.name) return &t;
    return nullptr;
}

// --tools-runtime docker:<image> / podman:<image>: one container for every call, `<engine> run --rm -i
// <image> sh` with its stdin held open (the shell waits on it), so closing stdin at exit ends and removes it.
class ContainerRuntime {
public:
    ContainerRuntime(std::string engine, std::string image) : engine_(std::move(engine)), image_(std::move(image)) {
        if (image_.empty()) fail("--tools-runtime %s:<image> needs an image name", engine_.c_str());
        spawn();
    }
    // "<engine>-container:<id>" of a running container (started again if it died).
    std::string spec() {
        std::lock_guard<std::mutex> lk(mu_);
        if (!proc_.alive()) {
            BEE_LOG_WARN("tools runtime container %s (%s) is gone: starting another", id_.c_str(), image_.c_str());
            spawn();
        }
        return engine_ + "-container:" + id_;
    }

private:
    std::string engine_, image_, id_;
    ChildProcess proc_;
    std::mutex mu_;

    void spawn() {
        proc_.kill();
        std::error_code ec;
        const std::filesystem::path cidfile =
            std::filesystem::temp_directory_path(ec) / fmt("bee-tools-runtime-%d-%p.cid", (int)getpid(), (void*)this);
        std::filesystem::remove(cidfile, ec);
        if (!proc_.start({engine_, "run", "--rm", "-i", "--cidfile", cidfile.string(), image_, "sh"}))
            fail("cannot start %s for --tools-runtime (is it installed?)", engine_.c_str());
        std::string cid;
        for (int i = 0; i < 300 && cid.empty() && proc_.alive(); i++) {
            std::ifstream f(cidfile);
            if (f) std::getline(f, cid);
            if (cid.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        std::filesystem::remove(cidfile, ec);
        if (cid.empty() && !proc_.alive())
            fail(
                "`%s run` for --tools-runtime (image %s) exited before the container started: see its message "
                "above (is the daemon running, is the image available?)",
                engine_.c_str(), image_.c_str());
        if (cid.empty()) {
            proc_.kill();
            fail("the %s container for --tools-runtime (image %s) did not start in 30 s", engine_.c_str(),
                 image_.c_str());
        }
        id_ = cid;
    }
};

class BuiltinTools : public ToolProvider {
public:
    BuiltinTools(std::vector<const BuiltinTool*> tools, const std::string& runtime) : tools_(std::move(tools)) {
        std::string engine, image;
        if (parse_container_image_spec(runtime, engine, image)) {
            container_ = std::make_unique<ContainerRuntime>(engine, image);
        } else if (!runtime.empty()) {
            try {
                make_tool_io("", runtime);  // checks the spec now rather than at the first call
            } catch (const HttpError& e) {
                fail("--tools-runtime: %s", e.what());
            }
            runtime_ = runtime;
        }
    }

    std::vector<Json> list() override {
        std::vector<Json> out;
        for (const BuiltinTool* t : tools_) {
            out.push_back(
                {{"display_name", t->display_name},
                 {"tool", t->name},
                 {"type", "server"},
                 {"permissions", {{"write", t->write}}},
                 {"uses_cwd", true},
                 {"definition",
                  {{"type", "function"},
                   {"function",
                    {{"name", t->name}, {"description", t->description}, {"parameters", t->parameters()}}}}}});
        }
        return out;
    }
    bool has(const std::string& name) override { return tool(name) != nullptr; }
    bool streams(const std::string& name) override {
        const BuiltinTool* t = tool(name);
        return t && t->stream;
    }
    Json call(const std::string& name, const Json& params, const ToolCall& how) override {
        const BuiltinTool* t = tool(name);
        if (!t) throw HttpError(404, "invalid_request_error", "unknown tool \"" + name + "\"");
        const std::string runtime = !how.runtime.empty() ? how.runtime : container_ ? container_->spec() : runtime_;
        std::unique_ptr<ToolIo> io = make_tool_io(how.cwd, runtime);
        return t->invoke(params, *io, how);
    }

private:
    std::vector<const BuiltinTool*> tools_;
    std::string runtime_;                          // a static --tools-runtime spec
    std::unique_ptr<ContainerRuntime> container_;  // a --tools-runtime container this server owns

    const BuiltinTool* tool(const std::string& name) const {
        for (const BuiltinTool* t : tools_)
            if (name == t->name) return t;
        return nullptr;
    }
};

}  // namespace

const std::vector<std::string>& builtin_tool_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const BuiltinTool& t : kTools) v.push_back(t.name);
        return v;
    }();
    return names;
}

void check_builtin_tool_names(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (n == "all" || find_tool(n)) continue;
        std::string known;
        for (const std::string& k : builtin_tool_names()) known += (known.empty() ? "" : ", ") + k;
        fail("--tools: unknown tool \"%s\" (available: all, %s)", n.c_str(), known.c_str());
    }
}

std::unique_ptr<ToolProvider> make_builtin_tools(const std::vector<std::string>& names, const std::string& runtime) {
    check_builtin_tool_names(names);
    const bool all = std::find(names.begin(), names.end(), "all") != names.end();
    std::vector<const BuiltinTool*> tools;
    for (const BuiltinTool& t : kTools)
        if (all || std::find(names.begin(), names.end(), t.name) != names.end()) tools.push_back(&t);
    return std::make_unique<BuiltinTools>(std::move(tools), runtime);
}

}  // namespace bee::server
