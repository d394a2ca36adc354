#include "kiln/base/logging.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace kiln {

namespace {
std::atomic<int> min_level{1};
}  // namespace

void SetLogLevel(int level) { min_level.store(level, std::memory_order_relaxed); }
int GetLogLevel() { return min_level.load(std::memory_order_relaxed); }

bool LogEnabled(LogSeverity severity) { return static_cast<int>(severity) >= GetLogLevel(); }

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
