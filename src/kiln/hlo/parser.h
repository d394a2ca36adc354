// The HLO text parser: reads everything XLA's text format allows, as JAX
// (jax.jit(f).lower(...).as_text(dialect="hlo")) and XLA's dumps (before and after
// optimization) write it.
//
// Errors are values: malformed input gives InvalidArgument with
//   FILE:LINE:COL: expected X, found Y
//   <the offending line>
//   <a caret under the column>
// and the parser never crashes or aborts, whatever the input (it is fuzzed).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

struct ParseOptions {
  // Name used for the text in error messages ("FILE:LINE:COL: ...").
  std::string filename = "<text>";
  // Elided constants ("constant({...})") are an error naming the constant unless this is set;
  // then they are filled with deterministic random values from `fill_seed` (as XLA's
  // run_hlo_module does with its random-fill option).
  bool fill_elided_constants = false;
  uint64_t fill_seed = 42;
  // A filled constant larger than this many bytes is an error (the fill allocates it whole).
  int64_t max_filled_constant_bytes = int64_t{1} << 31;
};

// Parses a whole module (with or without the "HloModule" header; a bare computation is
// accepted as the entry).
StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text,
                                                    const ParseOptions& options = {});

// Reads and parses a file; `options.filename` defaults to the path.
StatusOr<std::unique_ptr<HloModule>> ParseHloModuleFile(const std::string& path,
                                                        ParseOptions options = {});

// Parses a shape ("f32[2,3]{1,0}", "(s32[], f32[4])").
StatusOr<Shape> ParseShape(std::string_view text);

// Parses a literal of a known shape from its text form ("{1, 2, 3}", "(1, {2,3})", "nan").
StatusOr<Literal> ParseLiteral(std::string_view text, const Shape& shape);

}  // namespace kiln
