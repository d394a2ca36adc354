// ElementalEmitter: CUDA C++ for "the value of HLO instruction X at index I".
//
// Every kernel emitter is built on this: it walks an instruction's operands from the index of
// the element wanted down to the buffers the kernel reads, composing index mappings on the way
// (broadcast, reshape, bitcast, transpose, slice, pad, concatenate, reverse, iota,
// dynamic-slice, dynamic-update-slice, gather-free shape ops) and computing every elementwise
// op (and reduce, reduce-window, select-and-scatter, dot, convolution, per element) with XLA's semantics (device_types.h, kiln_codegen.cuh). Values are computed once per
// (instruction, index) while the block that computed them is open (common subexpressions:
// softmax's exp used twice is computed once), and each statement is placed in the outermost
// block its inputs allow (code_builder.h): a value that does not depend on the vector lane is
// computed once per vector, not once per lane.
//
// Leaves. The walk stops at bound leaves: buffers (a fusion's parameters, read from kernel
// pointer parameters with the leaf's shape and layout) and scalar arguments (the parameters of
// a device function). An override hook lets kernel emitters substitute values they computed
// themselves (a reduction's result for the current row, a transposed tile in shared memory).
//
// Vector lanes (Note [Index expressions]): inside a loop over the lanes of a vector, a read
// whose offset is base + lane with base a multiple of the width becomes one vector load of the
// whole vector (placed before the lane loop) and a per-lane register read; reads that do not
// depend on the lane are made once.
//
// Layouts: indices are logical; buffers are read at the physical offset their layout gives.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/codegen/code_builder.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/instruction.h"

namespace kiln::codegen {

class KernelSource;

// A value in generated code: an expression (a variable or literal) of RegisterType(type),
// defined in block `block` of the CodeBuilder (0: usable anywhere).
struct Value {
  std::string expr;
  PrimitiveType type = PrimitiveType::kInvalid;
  int block = 0;
};

// A logical multi-index into some shape, optionally with the physical linear offset of the same
// element in `linear_shape` (dimensions and layout), which lets a read of a buffer of exactly
// that shape skip the index arithmetic.
struct Index {
  std::vector<IExpr> dims;
  std::optional<IExpr> linear;
  std::shared_ptr<const Shape> linear_shape;
};

// Physical (row-major over minor_to_major) strides of an array shape, per logical dimension.
std::vector<int64_t> PhysicalStrides(const Shape& shape);
// Logical dimensions from minor to major in memory (the layout, or the default one).
std::vector<int64_t> MinorToMajor(const Shape& shape);
// Logical dimensions from major to minor in memory.
std::vector<int64_t> MajorToMinor(const Shape& shape);
// Whether two shapes have the same dimensions and the same physical order of non-degenerate
// dimensions (so equal logical indices have equal physical offsets).
bool SamePhysicalShape(const Shape& a, const Shape& b);

// The lane loop the emitter is inside, if any.
struct LaneContext {
  int var = -1;     // CodeBuilder variable of the lane index, -1: none
  int width = 1;    // lanes
  int depth = -1;   // depth of the lane loop's block
};

// Register cache of buffer reads shared by the passes over one row (row reductions with
// normalization epilogues): reads made while `it_var` iterates are kept in arrays indexed by it.
struct RowCache {
  int it_var = -1;     // the current pass's iteration variable
  int iterations = 0;  // its trip count (arrays have this many entries)
  int declare_depth = 0;
  // Reads are cached only when no conditional deeper than this depth guards them (the pass's
  // own bounds check is the same in every pass; a pad's or concatenate's is not).
  int max_load_depth = 0;
  bool allow_new = true;  // whether this pass may add entries
  int64_t max_elements = 64;  // per thread, over all entries
  int64_t elements = 0;
  // (pointer, offset without the it term, it coefficient) -> array name
  std::map<std::string, std::string> entries;
};

class ElementalEmitter {
 public:
  ElementalEmitter(KernelSource& source, CodeBuilder& code) : source_(source), code_(code) {}

  // Leaves.
  void BindBuffer(const HloInstruction* leaf, std::string pointer, Shape shape);
  void BindScalar(const HloInstruction* leaf, Value value);
  // Hook consulted first for every instruction (nullopt: not overridden). For tuple-shaped
  // instructions the vector holds one value per element.
  using Override =
      std::function<StatusOr<std::optional<std::vector<Value>>>(const HloInstruction&, const Index&)>;
  void SetOverride(Override o) { override_ = std::move(o); }
  void SetLane(LaneContext lane) { lane_ = lane; }
  const LaneContext& lane() const { return lane_; }
  void SetRowCache(RowCache* cache) { row_cache_ = cache; }

  // The value of array-shaped `instr` at `index` (index.dims has instr's rank).
  StatusOr<Value> Emit(const HloInstruction& instr, const Index& index);
  // The values of tuple-shaped `instr` (variadic reduce, tuple) at `index`.
  StatusOr<std::vector<Value>> EmitTuple(const HloInstruction& instr, const Index& index);

  // Defines `const RegisterType(t) name = expr;` in the outermost block allowed by `deps` and
  // `min_depth`, and returns it.
  Value Let(PrimitiveType t, std::string_view name, const std::string& expr,
            const std::vector<const Value*>& deps, int min_depth = 0);
  // Depth of the block defining `v` (0 for literals).
  int DepthOf(const Value& v) const;

  // The physical offset of `index` in an array of `shape`.
  IExpr Offset(const Shape& shape, const Index& index);
  // The index of physical offset `linear` in `shape` (with `linear` attached).
  Index Delinearize(const IExpr& linear, const Shape& shape);
  // The scalar index.
  static Index ScalarIndex() { return Index{}; }

  // Reads element `index` of a buffer (vector loads across lanes where possible).
  StatusOr<Value> ReadBuffer(const std::string& pointer, const Shape& shape, const Index& index,
                             std::string_view name_hint);

  // Leaves that were read (fusion parameters), for KernelParam::read.
  bool WasRead(const HloInstruction* leaf) const { return read_leaves_.count(leaf) > 0; }

  CodeBuilder& code() { return code_; }
  KernelSource& source() { return source_; }

  // A name for a value of `instr` (its HLO name, made unique).
  std::string NameFor(const HloInstruction& instr) { return code_.UniqueName(instr.name()); }

  // Calls the scalar computation `c` on `args`; returns its results (one per array leaf).
  // `min_depth`: the call is placed no further out than this depth (accumulator updates must
  // stay inside their loop).
  StatusOr<std::vector<Value>> CallComputation(const HloComputation& c,
                                               const std::vector<Value>& args,
                                               std::string_view name_hint, int min_depth = 0);

 private:
  friend class ElementalOps;
  StatusOr<std::vector<Value>> EmitUncached(const HloInstruction& instr, const Index& index);
  StatusOr<std::vector<Value>> EmitShapeOp(const HloInstruction& instr, const Index& index);
  StatusOr<std::vector<Value>> EmitPad(const HloInstruction& instr, const Index& index);
  StatusOr<std::vector<Value>> EmitConcatenate(const HloInstruction& instr, const Index& index);
  StatusOr<std::vector<Value>> EmitDynamicSlice(const HloInstruction& instr, const Index& index);
  StatusOr<std::vector<Value>> EmitDynamicUpdateSlice(const HloInstruction& instr,
                                                      const Index& index);
  StatusOr<std::vector<Value>> EmitReduce(const HloInstruction& instr, const Index& index);
  // elemental_window.cc
  StatusOr<std::vector<Value>> EmitReduceWindow(const HloInstruction& instr, const Index& index);
  StatusOr<std::vector<Value>> EmitSelectAndScatter(const HloInstruction& instr,
                                                    const Index& index);
  // elemental_contraction.cc
  StatusOr<std::vector<Value>> EmitDot(const HloInstruction& instr, const Index& index);
  StatusOr<std::vector<Value>> EmitConvolution(const HloInstruction& instr, const Index& index);
  StatusOr<std::vector<Value>> EmitBitcastConvertResize(const HloInstruction& instr,
                                                        const Index& index);
  StatusOr<std::vector<Value>> EmitGather(const HloInstruction& instr, const Index& index);
  // `v` (an integer index) clamped to [0, hi] as an index variable named `name`.
  StatusOr<IExpr> ClampedIndex(const HloInstruction& instr, const Value& v, int64_t hi,
                               const std::string& name);
  StatusOr<std::vector<Value>> EmitConstant(const HloInstruction& instr, const Index& index);
  // Emits the value of `instr` into the variable `out` (declared by the caller) inside the
  // current block.
  Status AssignInto(const Value& out, const HloInstruction& instr, const Index& index);
  // Clamped start indices of dynamic-slice / dynamic-update-slice operands [first, first+rank).
  StatusOr<std::vector<IExpr>> DynamicStarts(const HloInstruction& instr, int64_t first,
                                             const std::vector<int64_t>& operand_dims,
                                             const std::vector<int64_t>& window);
  std::string IndexKey(const Index& index) const;

  KernelSource& source_;
  CodeBuilder& code_;
  Override override_;
  LaneContext lane_;
  RowCache* row_cache_ = nullptr;
  struct Leaf {
    bool is_buffer = true;
    std::string pointer;
    Shape shape;
    Value scalar;
  };
  std::unordered_map<const HloInstruction*, Leaf> leaves_;
  std::unordered_map<const HloInstruction*, int> leaf_read_;
  std::unordered_map<const HloInstruction*, bool> read_leaves_;
  struct CacheEntry {
    std::vector<Value> values;
    int block;
  };
  std::unordered_map<std::string, CacheEntry> cache_;
  std::unordered_map<std::string, std::pair<std::string, int>> vector_loads_;  // key -> (name, block)
};

}  // namespace kiln::codegen
