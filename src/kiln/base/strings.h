// Small string helpers (the project uses no Abseil).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Concatenates anything that streams: StrCat("x=", 3, ", y=", 2.5).
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Joins a range with a separator; `fmt(os, element)` writes one element (default: os << e).
template <typename Range>
std::string StrJoin(const Range& range, std::string_view sep) {
  std::ostringstream os;
  bool first = true;
  for (const auto& e : range) {
    if (!first) os << sep;
    first = false;
    os << e;
  }
  return os.str();
}
template <typename Range, typename Fmt>
std::string StrJoin(const Range& range, std::string_view sep, Fmt fmt) {
  std::ostringstream os;
  bool first = true;
  for (const auto& e : range) {
    if (!first) os << sep;
    first = false;
    fmt(os, e);
  }
  return os.str();
}

std::vector<std::string_view> StrSplit(std::string_view s, char sep);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
std::string_view StripWhitespace(std::string_view s);

// Quotes and escapes a string the way HLO text does ("a\"b\n").
std::string CEscapeQuoted(std::string_view s);

// Formats a floating value with the fewest digits that read back to the same value.
std::string RoundTripDouble(double v);
std::string RoundTripFloat(float v);

// Human-readable byte count ("1.50 MiB").
std::string HumanBytes(uint64_t bytes);

}  // namespace kiln
