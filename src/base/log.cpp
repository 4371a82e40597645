// base/log: stderr logger.
#include "base/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace bee {

static LogLevel level_from_env() {
    const char* s = getenv("BEE_LOG");
    if (!s) return LogLevel::info;
    if (!strcmp(s, "debug")) return LogLevel::debug;
    if (!strcmp(s, "warn")) return LogLevel::warn;
    if (!strcmp(s, "error")) return LogLevel::error;
    if (!strcmp(s, "off")) return LogLevel::off;
    return LogLevel::info;
}

static std::atomic<int> g_level{(int)level_from_env()};

static std::atomic<FILE*> g_file{nullptr};
static std::atomic<bool> g_timestamps{false};

void log_set_level(LogLevel level) { g_level = (int)level; }
void log_set_file(FILE* file) { g_file = file; }
void log_set_timestamps(bool on) { g_timestamps = on; }
LogLevel log_level() { return (LogLevel)g_level.load(); }

void log_msg(LogLevel level, const char* fmt, ...) {
    if ((int)level < g_level.load()) return;
    static const char* names[] = {"debug", "info", "warn", "error"};
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char stamp[32] = "";
    if (g_timestamps.load()) {
        timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        tm t;
        localtime_r(&ts.tv_sec, &t);
        snprintf(stamp, sizeof stamp, "%02d:%02d:%02d.%03ld ", t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000000);
    }
    fprintf(stderr, "%sbee %s: %s\n", stamp, names[(int)level], buf);
    if (FILE* f = g_file.load()) {
        fprintf(f, "%sbee %s: %s\n", stamp, names[(int)level], buf);
        fflush(f);
    }
}

}  // namespace bee
