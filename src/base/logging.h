// Logging: one line per event on stderr, flushed, in text or JSON form. The server's
// per-request line and the cache's divergence line go through here so tests can read them.
#pragma once

#include <string>
#include <string_view>

namespace qmlx {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kText, kJson };

void set_log_level(LogLevel level);
void set_log_format(LogFormat format);
LogLevel log_level();

// Writes one complete line atomically (a mutex guards stderr) and flushes it.
void log_line(LogLevel level, std::string_view message);

inline void log_debug(std::string_view m) { log_line(LogLevel::kDebug, m); }
inline void log_info(std::string_view m) { log_line(LogLevel::kInfo, m); }
inline void log_warn(std::string_view m) { log_line(LogLevel::kWarn, m); }
inline void log_error(std::string_view m) { log_line(LogLevel::kError, m); }

}  // namespace qmlx
