// libFuzzer target for the HLO parser and printer.
//
// Every input must parse or fail with a Status (never crash, hang or recurse without bound).
// Inputs that parse must print, re-parse, and print to the same text (the printer's fixed
// point), else the fuzzer traps.
//
// Build (clang only) and run, from the repository root:
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
//         -DKILN_BUILD_FUZZERS=ON -DKILN_BUILD_TESTS=OFF
//   ninja -C build-fuzz hlo_parser_fuzzer
// Seed corpus (not checked in; made from the shared data beside the checkout):
//   mkdir -p build-fuzz/seeds
//   cp ../shared/corpus/xla-fuzz/*.hlo build-fuzz/seeds/
//   for d in ../shared/bench/suite/*/; do cp "$d/module.opt.hlo" "build-fuzz/seeds/$(basename $d).opt.hlo"; done
//   build-fuzz/src/kiln/hlo/hlo_parser_fuzzer -dict=src/kiln/hlo/parser_fuzzer.dict \
//       -max_len=8192 -timeout=10 -rss_limit_mb=2048 build-fuzz/corpus build-fuzz/seeds
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "kiln/hlo/parser.h"
#include "kiln/hlo/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::ParseOptions options;
  // Exercise the fill path on small inputs only (a fill allocates the constant's full size).
  options.fill_elided_constants = size % 2 == 0;
  options.max_filled_constant_bytes = 1 << 20;
  auto module = kiln::ParseHloModule(text, options);
  if (!module.ok()) return 0;
  std::string printed = (*module)->ToString();
  (void)(*module)->Fingerprint();
  auto reparsed = kiln::ParseHloModule(printed, options);
  if (!reparsed.ok()) {
    std::fprintf(stderr, "printed module does not parse: %s\n--- printed ---\n%s\n",
                 reparsed.status().ToString().c_str(), printed.c_str());
    __builtin_trap();
  }
  std::string reprinted = (*reparsed)->ToString();
  if (reprinted != printed) {
    std::fprintf(stderr, "print is not a fixed point\n--- first ---\n%s\n--- second ---\n%s\n",
                 printed.c_str(), reprinted.c_str());
    __builtin_trap();
  }
  return 0;
}
