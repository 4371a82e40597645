// server/subprocess: runs programs for the agent tools (server/tools_io): argv straight to posix_spawnp (no
// shell unless asked for), stdin and stdout on pipes, a time limit that kills the child's whole process
// group, and a long-lived child whose stdin stays open (the container --tools-runtime keeps).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace bee::server {

struct RunResult {
    std::string output;  // stdout (and stderr, merged), at most max_output bytes plus the truncation note
    int exit_code = -1;  // the exit status; 128 + N for a child killed by signal N; -1: it never ran
    bool timed_out = false;
};

struct RunOptions {
    size_t max_output = 16 * 1024;       // bytes kept; the rest is read and dropped, "\n[output truncated]" added
    int timeout_s = 10;                  // the child's process group is killed after this
    std::string cwd;                     // working directory (empty: the server's)
    const std::string* input = nullptr;  // written to the child's stdin before it is closed
    bool merge_stderr = true;            // false: stderr is dropped (output that must be the raw bytes)
    std::function<bool(const std::string&)> on_chunk;  // each piece of output as it comes; false kills the child
};

// Runs argv[0] (looked up in PATH) with argv and waits for it. Never throws: a program that cannot be
// started (not found, cwd not a directory) is exit code 127 with the reason as output, as from a shell;
// no pipes or descriptors left is -1, "failed to spawn process".
RunResult run_process(const std::vector<std::string>& argv, const RunOptions& o);

// A child that runs until its stdin is closed or it is killed: stdin is a pipe kept open, stdout is
// dropped, stderr is the server's.
class ChildProcess {
public:
    ChildProcess() = default;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess() { stop(); }

    bool start(const std::vector<std::string>& argv);  // false: it could not be started
    bool alive();
    void stop();  // closes stdin and waits (killing the group after 10 s)
    void kill();  // kills the group and waits

private:
    pid_t pid_ = -1;
    int stdin_fd_ = -1;
};

}  // namespace bee::server
