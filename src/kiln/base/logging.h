// Minimal leveled logging to stderr. Libraries log sparingly: a warning that matters once, not a
// line per element. KILN_LOG_LEVEL (0=info, 1=warning, 2=error; default 1) filters output.
#pragma once

#include <sstream>
#include <string>

namespace kiln {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2 };

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
