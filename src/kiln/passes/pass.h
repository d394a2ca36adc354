// HloPass: one module-to-module rewrite.
//
// A pass may change anything in the module but must leave it valid (the pipeline runs the
// verifier between passes in debug builds and when asked). It reports whether it changed the
// module so fixed-point pipelines know when to stop. A pass must not keep pointers into the
// module after Run returns.
#pragma once

#include <string_view>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

class HloPass {
 public:
  virtual ~HloPass() = default;
  virtual std::string_view name() const = 0;
  // Runs the pass; returns true if the module changed.
  virtual StatusOr<bool> Run(HloModule& module) = 0;
};

}  // namespace kiln
