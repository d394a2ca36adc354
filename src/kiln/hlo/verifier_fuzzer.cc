// libFuzzer target for the verifier (and the shape inference it runs) on whatever parses.
//
// Every input that parses must verify or fail with a Status -- never crash, hang or read out of
// bounds -- under both the default options and the layout-sensitive ones; a module that verifies
// must print and re-parse. Build and run as hlo_parser_fuzzer (parser_fuzzer.cc), or through
// `./kiln.sh fuzz SECONDS`, which runs every *_fuzzer target with parser_fuzzer.dict.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "kiln/hlo/parser.h"
#include "kiln/hlo/printer.h"
#include "kiln/hlo/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::ParseOptions options;
  options.fill_elided_constants = false;
  auto module = kiln::ParseHloModule(text, options);
  if (!module.ok()) return 0;
  kiln::VerifierOptions vo;
  const kiln::Status plain = kiln::VerifyModule(**module, vo);
  vo.layout_sensitive = true;
  (void)kiln::VerifyModule(**module, vo);
  if (!plain.ok()) return 0;
  const std::string printed = (*module)->ToString();
  auto reparsed = kiln::ParseHloModule(printed, options);
  if (!reparsed.ok()) {
    std::fprintf(stderr, "a verified module's print does not parse: %s\n--- printed ---\n%s\n",
                 reparsed.status().ToString().c_str(), printed.c_str());
    __builtin_trap();
  }
  return 0;
}
