// KernelSource: the file-level part of one generated CUDA source -- header comment, includes,
// constant arrays, device functions for scalar computations (reducers, map bodies), and the
// kernel entry points.
#pragma once

#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/instruction.h"

namespace kiln::codegen {

// A device function compiled from a scalar HLO computation.
struct ScalarFunction {
  std::string name;
  std::vector<PrimitiveType> params;
  std::vector<PrimitiveType> results;  // one per array leaf of the root
  bool tuple_result = false;           // results are returned through pointers
};

class KernelSource {
 public:
  explicit KernelSource(std::string title) : title_(std::move(title)) {}

  // A file-scope identifier derived from `base`, unique in this source.
  std::string UniqueGlobalName(std::string_view base);
  // Comment lines for the header (the HLO, the config, the launch).
  void AddHeaderComment(const std::string& text);
  // A `__device__ const` array holding `constant`'s elements (register type, logical row-major
  // order); returns an expression to index (its name). The same constant instruction gets one
  // array. Float arrays holding a NaN are stored as their register bits (a NaN's payload has no
  // constant-expression spelling): the expression is then the array seen as `const float*`.
  StatusOr<std::string> ConstantArray(const HloInstruction& constant);
  // The device function for a scalar computation (parameters and root of rank 0, arrays or a
  // tuple of arrays), emitted on first use.
  StatusOr<const ScalarFunction*> Function(const HloComputation& computation);
  // Appends an entry point (complete text).
  void AddEntry(std::string text) { entries_.push_back(std::move(text)); }

  // The complete source.
  std::string Render() const;

 private:
  std::string title_;
  std::string header_comment_;
  std::unordered_set<std::string> globals_;
  std::vector<std::string> declarations_;
  std::vector<std::string> entries_;
  std::map<const HloInstruction*, std::string> constants_;
  std::map<const HloComputation*, ScalarFunction> functions_;
  std::unordered_set<const HloComputation*> in_progress_;
};

}  // namespace kiln::codegen
