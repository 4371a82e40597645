// base/log: stderr logger.
#include "base/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

void log_set_level(LogLevel level) { g_level = (int)level; }
LogLevel log_level() { return (LogLevel)g_level.load(); }

void log_msg(LogLevel level, const char* fmt, ...) {
    if ((int)level < g_level.load()) return;
    static const char* names[] = {"debug", "info", "warn", "error"};
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "bee %s: %s\n", names[(int)level], buf);
}

}  // namespace bee
