// Shared plumbing of the kernel emitters (internal to codegen/): the view of an instruction as
// "roots computed from leaves", and the assembly of a KernelSpec (parameters, entry signature,
// index width, the HLO text for the header).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/kernel_source.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/hlo/instruction.h"

namespace kiln::codegen {

// One output array of a kernel: `value` at its own index (tuple_index >= 0: element of the
// tuple-shaped value, e.g. a variadic reduce).
struct KernelOutput {
  const HloInstruction* value = nullptr;
  int64_t tuple_index = -1;
  Shape shape;  // with layout
};

// An instruction seen as what a kernel computes. For a fusion: the fused computation, its
// parameters as leaves (leaf i = operand i) and the root's outputs. For any other instruction:
// the instruction itself as the root and its operands as leaves.
struct FusionView {
  const HloInstruction* instr = nullptr;
  const HloComputation* computation = nullptr;  // the fused computation, or nullptr
  std::vector<const HloInstruction*> leaves;    // per operand
  std::vector<KernelOutput> outputs;
  // Every non-leaf instruction computed by the kernel, in post order (operands first).
  std::vector<const HloInstruction*> body;
};
StatusOr<FusionView> MakeFusionView(const HloInstruction& instr);

// Shape with the default layout filled in when missing.
Shape WithLayout(const Shape& shape);

// Builds one KernelSpec: parameters in the documented order, the entry signature, the source.
class KernelAssembler {
 public:
  // `dialect`: the language of the source (the prelude it includes; Note [HIP dialect]).
  KernelAssembler(const FusionView& view, std::string emitter, const KernelConfig& config,
                  GpuDialect dialect = GpuDialect::kCuda);

  const FusionView& view() const { return view_; }
  KernelSource& source() { return source_; }
  // "int" or "long long": 64-bit indices only when some array of the kernel has 2^30 elements
  // or more.
  const std::string& index_type() const { return index_type_; }
  const std::string& operand_pointer(int64_t i) const { return operand_ptrs_[i]; }
  const std::string& output_pointer(int64_t i) const { return output_ptrs_[i]; }
  // Marks output `output` as the operand's buffer (in-place update): neither gets __restrict__.
  void SetInPlace(int64_t output, int64_t operand);
  // Adds a scratch buffer parameter ("scratch", u8*); returns its name.
  std::string AddScratch(int64_t bytes);

  // Binds the view's leaves to the operand pointers in `em`.
  void BindLeaves(ElementalEmitter& em) const;
  // `extern "C" __global__ void __launch_bounds__(max_threads) entry(params) {` + body + `}`.
  void AddEntry(const std::string& entry, int max_threads, const std::string& body);
  void AddLaunch(const std::string& entry, runtime::LaunchDims dims);
  // Records which leaves the emitters read (KernelParam::read).
  void NoteReads(const ElementalEmitter& em);
  // Marks operand `i` read (for kernels that read it without the elemental emitter).
  void MarkRead(int64_t i) { operand_read_[i] = true; }

  StatusOr<KernelSpec> Finish();

 private:
  std::string ParamList() const;
  const FusionView& view_;
  KernelSpec spec_;
  KernelSource source_;
  std::string index_type_;
  std::vector<std::string> operand_ptrs_, output_ptrs_;
  std::vector<bool> operand_read_;
  std::string scratch_ptr_;
  GpuDialect dialect_;
};

// Helpers for emitters.
int64_t CeilDiv(int64_t a, int64_t b);
// The largest power of two <= v (v >= 1).
int64_t FloorPow2(int64_t v);
// Declares `threadIdx.x`-style inputs as index variables.
int DeclareThreadVar(CodeBuilder& code, const std::string& name, const std::string& expr,
                     int64_t max, int64_t multiple_of = 1);
// `const <index type> name = expr;` declared in the current block as a variable in [min, max].
IExpr DeclareIndex(CodeBuilder& code, const std::string& name, const std::string& expr, int64_t min,
                   int64_t max, int64_t multiple_of = 1);
// Stores `value` at `index` of output `out` (pointer `ptr`); `vec` receives the lane's element
// instead when the store is vectorized (see StorePlan).
struct StorePlan {
  bool vector = false;     // one vector store after the lane loop
  std::string vec_name;    // the kiln_vec holding the lanes
  std::string base;        // rendered offset of lane 0 (vector stores)
  IExpr base_expr;
};
// Plans a store of `shape` at `index` inside the lane loop described by `lane`: a vector store
// when the offset is base + lane with an aligned base. Declares the vector before the lane loop.
StorePlan PlanStore(ElementalEmitter& em, const std::string& ptr, const Shape& shape,
                    const Index& index, std::string_view name_hint);
// Emits the store of `value` (inside the lane loop) per plan.
void EmitStore(ElementalEmitter& em, const StorePlan& plan, const std::string& ptr,
               const Shape& shape, const Index& index, const Value& value);
// After the lane loop closed: the vector store, if planned.
void FinishStore(CodeBuilder& code, const StorePlan& plan, const std::string& ptr,
                 const Shape& shape, int width);

}  // namespace kiln::codegen
