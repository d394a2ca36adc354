// DynamicShapeLowering: the dynamic-shape custom calls and get-dimension-size become ordinary
// HLO, with the runtime sizes carried as s32 values, so that the compiled backends run them
// with the kernels they have (a small form of XLA's dynamic padder).
//
// The rules are the evaluator's (Note [Dynamic sizes] in eval/dynamic_shapes.h): a bounded
// dynamic array is held at its bound; its sizes come from SliceToDynamic's size operands or
// set-dimension-size's size (clamped to [0, bound]), are the bounds for entry parameters and
// constants, and pass through SetBound, copy and elementwise ops. Then
//   SliceToDynamic(x, s...)       -> copy(x)                     (the dynamic result shape)
//   set-dimension-size(x, s)      -> copy(x)
//   SetBound(x)                   -> x
//   PadToStatic(d)                -> tuple(select(iota_0 < s_0 && ..., copy(d), 0), s_0, ...)
//   get-dimension-size(d), dims={k} -> s_k (a constant for a static dimension or a bound)
//   DynamicConvolutionForward(x, w) of static shapes -> convolution(x, w) (same window,
//                                    dim_labels, groups, precision)
// A PadToStatic or get-dimension-size that reads a dynamic size the rules do not give (the
// result of a reduce, a while loop's state) is Unimplemented, naming both instructions, rather
// than a silent bound. Other dynamic shapes are left as they are (held at their bounds).
#pragma once

#include "kiln/passes/pass.h"

namespace kiln {

class DynamicShapeLowering : public HloPass {
 public:
  std::string_view name() const override { return "dynamic-shape-lowering"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
