// Minimal leveled logging to stderr. Libraries log sparingly: a warning that matters once, not a
// line per element. SetLogLevel filters output (process-wide; the `kiln` tool sets it from
// KILN_LOG_LEVEL, see api/environment.h).
#pragma once

#include <sstream>
#include <string>

namespace kiln {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2 };

// Messages below `level` are dropped: 0 everything (info), 1 warnings and errors (default),
// 2 errors only, 3 or more nothing. May be called at any time, from any thread.
void SetLogLevel(int level);
int GetLogLevel();

bool LogEnabled(LogSeverity severity);
void LogMessage(LogSeverity severity, const char* file, int line, const std::string& message);

namespace internal {
class LogStream {
 public:
  LogStream(LogSeverity s, const char* file, int line) : s_(s), file_(file), line_(line) {}
  ~LogStream() { LogMessage(s_, file_, line_, os_.str()); }
  template <typename T>
  LogStream& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  LogSeverity s_;
  const char* file_;
  int line_;
  std::ostringstream os_;
};
}  // namespace internal

}  // namespace kiln

#define KILN_LOG(severity)                                               \
  if (!::kiln::LogEnabled(::kiln::LogSeverity::k##severity)) {           \
  } else                                                                 \
    ::kiln::internal::LogStream(::kiln::LogSeverity::k##severity, __FILE__, __LINE__)
