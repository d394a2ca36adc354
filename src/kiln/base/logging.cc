#include "kiln/base/logging.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace kiln {

static int MinLevel() {
  static const int level = [] {
    const char* env = std::getenv("KILN_LOG_LEVEL");
    return env ? std::atoi(env) : 1;
  }();
  return level;
}

bool LogEnabled(LogSeverity severity) { return static_cast<int>(severity) >= MinLevel(); }

void LogMessage(LogSeverity severity, const char* file, int line, const std::string& message) {
  static std::mutex mu;
  const char* tag = severity == LogSeverity::kInfo      ? "I"
                    : severity == LogSeverity::kWarning ? "W"
                                                        : "E";
  const char* base = file;
  for (const char* p = file; *p; ++p)
    if (*p == '/') base = p + 1;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "kiln %s %s:%d] %s\n", tag, base, line, message.c_str());
}

}  // namespace kiln
