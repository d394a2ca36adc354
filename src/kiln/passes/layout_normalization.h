// Layout normalization: every array of the module is made row-major (the default descending
// layout), which is what the CPU kernels and buffers (cpu/kernel.h) and the GPU compiler's
// kernels and library calls use. Shared by both backends (it used to live in cpu/, which
// cpu/layout_normalization.h still forwards to).
//
// Layouts do not change what an HLO program computes -- except where a program reinterprets
// memory (bitcast) and at the entry boundary, where the caller's buffers are laid out as
// entry_computation_layout says. So the pass
//   1. rewrites every bitcast whose operand or result has a non-default layout into logical
//      operations: transpose(operand) into its physical order, a row-major reshape (plus a
//      bitcast-convert when the element type changes at the same width) into the result's
//      physical dimensions, and a transpose back to the result's logical order (identity steps
//      left out). A bitcast between default layouts becomes a reshape (same element type), a
//      reshape + bitcast-convert (same width), reshape + bitcast-convert + reshape (across
//      widths with a sub-byte side: s4[16]{0:E(4)} -> s8[8]), or stays a row-major bitcast (a
//      view of the same bytes, different byte widths);
//   2. then drops every layout (and every other layout attribute: tiling, memory space,
//      element size) from every instruction of every computation, fused and embedded ones
//      included, and from entry_computation_layout, putting the default layout in its place.
// What the entry boundary looked like before is captured by GetEntryLayouts() (the compiler
// calls it first); the executable relayouts arguments and results whose layout is not the
// default at the boundary (cpu/executable.h, cuda/compiler/gpu_executable.h).
//
// Only minor_to_major is modelled: tiled layouts (T(8,128)), packed sub-byte element sizes
// (E(4)) and the like are treated as their minor_to_major order, as the reference evaluator
// treats them.
#pragma once

#include <vector>

#include "kiln/hlo/layout.h"
#include "kiln/passes/pass.h"

namespace kiln {

// The layouts of the entry computation's parameter and result array leaves (in
// ArrayLeafIndices order): from entry_computation_layout where it is present, else from the
// entry's parameter and root shapes; a leaf with no layout (or an invalid one) has the default.
// Only minor_to_major is kept.
struct EntryLayouts {
  std::vector<std::vector<Layout>> parameters;  // [parameter][leaf]
  std::vector<Layout> result;                   // [leaf]
};
EntryLayouts GetEntryLayouts(const HloModule& module);

// The physical order of an array of `rank` dimensions in `layout`: dimensions major to minor
// ({0, 1, ..., rank-1} for the default layout).
std::vector<int64_t> MajorToMinor(const Layout& layout, int64_t rank);
bool IsDefaultOrder(const Layout& layout, int64_t rank);

class LayoutNormalization : public HloPass {
 public:
  std::string_view name() const override { return "layout-normalization"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
