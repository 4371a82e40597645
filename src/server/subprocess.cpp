// server/subprocess: posix_spawn with pipes, a time limit and a kill of the whole process group.
#include "server/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace bee::server {

namespace {

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
    std::vector<char*> out;
    for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
    out.push_back(nullptr);
    return out;
}

bool make_pipe(int fds[2]) { return pipe2(fds, O_CLOEXEC) == 0; }

// Starts argv[0] (looked up in PATH) on the given stdin, stdout and stderr, in `cwd` (null: ours),
// leading its own process group (so a time limit can kill everything it started), with the default
// signal mask and SIGPIPE action (the server blocks SIGINT/SIGTERM and ignores SIGPIPE) and no other
// descriptor. note: posix_spawn, not fork: glibc starts the child without copying the server's page
// tables, which a loaded model makes large. -1 and `err` when it cannot start.
pid_t spawn(const std::vector<std::string>& argv, const std::string& cwd, int in_fd, int out_fd, int err_fd,
            std::string& err) {
    struct stat st {};
    if (!cwd.empty() && (stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
        err = "cannot change to the working directory " + cwd + ": not a directory\n";
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // the server's sockets and files
#endif
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> args = c_argv(argv);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, args[0], &fa, &at, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc == 0) return pid;
    err = "cannot run " + argv[0] + ": " + strerror(rc) + "\n";
    return -1;
}

int exit_code_of(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

int wait_exit_code(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return exit_code_of(st);
}

void write_all(int fd, const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
        const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the child closed its stdin: its exit code tells what happened
        off += (size_t)n;
    }
}

}  // namespace

RunResult run_process(const std::vector<std::string>& argv, const RunOptions& o) {
    RunResult r;
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    int devnull = o.merge_stderr ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (argv.empty() || !make_pipe(in) || !make_pipe(out) || (!o.merge_stderr && devnull < 0)) {
        for (int* fd : {&in[0], &in[1], &out[0], &out[1], &devnull}) close_fd(*fd);
        r.output = "failed to spawn process";
        return r;
    }
    std::string err;
    const pid_t pid = spawn(argv, o.cwd, in[0], out[1], o.merge_stderr ? out[1] : devnull, err);
    close_fd(in[0]);
    close_fd(out[1]);
    close_fd(devnull);
    if (pid < 0) {  // as a shell reports a command it cannot run
        close_fd(in[1]);
        close_fd(out[0]);
        r.output = o.merge_stderr ? err : "";
        r.exit_code = 127;
        return r;
    }
    if (o.input) write_all(in[1], *o.input);
    close_fd(in[1]);

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_s);
    bool truncated = false, killed = false;
    char buf[4096];
    for (;;) {
        if (std::chrono::steady_clock::now() >= deadline) {
            r.timed_out = true;
            break;
        }
        pollfd pfd{out[0], POLLIN, 0};
        const int pr = poll(&pfd, 1, 100);
        if (pr < 0 && errno != EINTR) break;
        if (pr <= 0) continue;
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (truncated) continue;  // keep draining, or the child blocks on a full pipe
        const size_t keep = std::min((size_t)n, o.max_output - r.output.size());
        r.output.append(buf, keep);
        if (keep < (size_t)n) truncated = true;
        if (o.on_chunk && keep > 0 && !o.on_chunk(std::string(buf, keep))) {
            killed = true;
            break;
        }
    }
    if (r.timed_out || killed) ::kill(-pid, SIGKILL);
    close_fd(out[0]);
    // a child that closed its stdout can still run: the time limit holds until it exits
    int st = 0;
    pid_t done = 0;
    while (!r.timed_out && !killed && (done = waitpid(pid, &st, WNOHANG)) == 0) {
        if (std::chrono::steady_clock::now() >= deadline) {
            r.timed_out = true;
            ::kill(-pid, SIGKILL);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (r.timed_out || killed) r.exit_code = wait_exit_code(pid);
    else r.exit_code = done == pid ? exit_code_of(st) : -1;
    if (truncated) r.output += "\n[output truncated]";
    return r;
}

bool ChildProcess::start(const std::vector<std::string>& argv) {
    int in[2] = {-1, -1};
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (argv.empty() || devnull < 0 || !make_pipe(in)) {
        close_fd(devnull);
        return false;
    }
    std::string err;
    const pid_t pid = spawn(argv, "", in[0], devnull, 2, err);
    close_fd(in[0]);
    close_fd(devnull);
    if (pid < 0) {
        close_fd(in[1]);
        return false;
    }
    pid_ = pid;
    stdin_fd_ = in[1];
    return true;
}

bool ChildProcess::alive() {
    if (pid_ < 0) return false;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == 0) return true;
    pid_ = -1;
    close_fd(stdin_fd_);
    return false;
}

void ChildProcess::stop() {
    close_fd(stdin_fd_);
    for (int i = 0; i < 100 && alive(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill();
}

void ChildProcess::kill() {
    close_fd(stdin_fd_);
    if (pid_ < 0) return;
    ::kill(-pid_, SIGKILL);
    wait_exit_code(pid_);
    pid_ = -1;
}

}  // namespace bee::server
