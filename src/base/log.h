// base/log: leveled logging to stderr. Level from BEE_LOG=debug|info|warn|error (default info) or log_set_level.
#pragma once
#include <cstdio>

namespace bee {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

void log_set_level(LogLevel level);
LogLevel log_level();
// Every line also goes to `file` (nullptr: stderr only); the caller keeps it open.
void log_set_file(FILE* file);
// Lines start with the local time (HH:MM:SS.mmm).
void log_set_timestamps(bool on);
void log_msg(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#define BEE_LOG_DEBUG(...) ::bee::log_msg(::bee::LogLevel::debug, __VA_ARGS__)
#define BEE_LOG_INFO(...) ::bee::log_msg(::bee::LogLevel::info, __VA_ARGS__)
#define BEE_LOG_WARN(...) ::bee::log_msg(::bee::LogLevel::warn, __VA_ARGS__)
#define BEE_LOG_ERROR(...) ::bee::log_msg(::bee::LogLevel::error, __VA_ARGS__)

}  // namespace bee
