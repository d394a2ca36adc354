// UnfuseAll: inlines every fusion of the module's sequential computations, so that a module
// optimized elsewhere (XLA's dumps arrive fused by XLA's policy) is fused again by the
// backend's own policy. Used first in the CPU and CUDA pipelines.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln {

class UnfuseAll : public HloPass {
 public:
  std::string_view name() const override { return "unfuse"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
