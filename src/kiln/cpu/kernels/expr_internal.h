// Internals of ExprProgram shared by its compile, map and execution files.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/cpu/kernels/expr_program.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cpu::internal {

// ---- Index maps (see Note [Block expression programs]) ----
//
// A map turns the runs of its parent (linear indices into the "consumer" shape C) into runs of
// linear indices into its "operand" shape O. Shapes are kept with size-1 dimensions dropped and
// adjacent dimensions merged wherever the map is linear across them, so runs are split only
// where the map really bends.
enum class MapKind : uint8_t {
  kLoop,    // the loop space itself: one run {0, n, start, 1} per block
  kScalar,  // a rank-0 operand (broadcast of a scalar): one element, invariant
  kAffine,  // lin_O = K + sum_c coef[c] * j_c (+ dynamic-slice offsets)
  kWindow,  // pad operand / concatenate operand: per dim, valid iff 0 <= j - low < size *
            // (interior + 1) and (j - low) % (interior + 1) == 0; j_O = (j - low) / (interior + 1)
};

struct ExprMap {
  int id = 0;
  int parent = -1;
  MapKind kind = MapKind::kLoop;
  bool invariant = false;
  // Consumer shape after dropping size-1 dims and merging (dims and row-major strides in
  // elements of the full consumer shape).
  std::vector<int64_t> c_dims, c_strides;
  // kAffine: coefficient of each merged consumer dim; static part of K.
  std::vector<int64_t> coef;
  int64_t k_static = 0;
  // kAffine, dynamic-slice: invariant value ids of the start indices with the operand stride
  // and the clamp bound of each (start clamped into [0, hi]).
  struct DynStart {
    int value;
    PrimitiveType type;
    int64_t hi;
    int64_t stride;
  };
  std::vector<DynStart> dyn;
  // kWindow: per merged consumer dim.
  std::vector<int64_t> low, size, interior, o_strides;
  bool any_interior = false;
};

// ---- Ops ----

struct ExprOp;
// A typed block loop: computes op.out from op.in over n elements. ptrs[v] is value v's array.
using BlockFn = void (*)(const ExprOp& op, int64_t n, void* const* ptrs);

struct ExprOp {
  enum class Kind : uint8_t {
    kMap,      // compute runs of `map`
    kRead,     // out = input `input` (or `data`) gathered along `map`'s runs
    kIota,     // out = linear index along `map`'s runs, converted to `type`
    kCompute,  // out = fn(in...) elementwise (typed loop `fn`, or `efn` per element)
    kPad,      // out = pad value values[1] (invariant), then values[0] copied along maps[0]
    kConcat,   // out = values[k] copied along maps[k], for each k
    kSplat,    // out (block value) = n copies of invariant value in[0]
    kChain,    // out = f32 chain of binary ops in registers: Note [Fused op chains]
  };
  Kind kind = Kind::kCompute;
  const HloInstruction* instr = nullptr;
  PrimitiveType type = PrimitiveType::kInvalid;  // of out
  int width = 0;                                 // bytes per element of out
  int out = -1;
  int num_in = 0;
  int in[3] = {-1, -1, -1};
  int in_width[3] = {0, 0, 0};
  BlockFn fn = nullptr;
  // Binary ops: the loop with operand 0 (fn_sa) or 1 (fn_sb) block-uniform, read at element 0
  // (Note [Uniform block values]); nullptr when there is none.
  BlockFn fn_sa = nullptr, fn_sb = nullptr;
  eval_internal::ElementFn efn = nullptr;
  int map = -1;
  int input = -1;
  // kRead of a root: a gather goes to ptrs[out] as EvalBlock set it (the root's destination or
  // its buffer), not through a buffer and a copy.
  bool gather_in_place = false;
  const void* data = nullptr;
  std::vector<int> maps;
  std::vector<int> values;
  // kChain: values[0] starts the chain; step k applies codes[k] with operand values[k + 1]
  // (-1: the chain value itself). codes[k] = ChainOp | kChainRev (the chain value is the right
  // operand) | kChainSelf.
  std::vector<uint8_t> codes;
};

// ---- Fused op chains (Note [Fused op chains], expr_compile.cc) ----
enum ChainCode : uint8_t {
  kChainAdd = 0, kChainSub = 1, kChainMul = 2, kChainDiv = 3,
  kChainRev = 4, kChainSelf = 8,
  kChainTanh = 16,  // a unary step: tanh of the chain value (values[k + 1] == -1)
};
constexpr int kMaxChainSteps = 8;
// Evaluates a kChain op over n elements. Operand v is one value for the whole block (read at
// element 0) when uniform != nullptr and uniform[v] != 0 (Note [Uniform block values]).
void ChainBlockF32(const ExprOp& op, int64_t n, void* const* ptrs, const uint8_t* uniform);

// The typed block loop of an elementwise instruction (operands given by their element types),
// or nullptr when there is none (then the generic per-element ElementFn path is used).
BlockFn ResolveElementwiseBlockFn(const HloInstruction& instr);
// The loop of a binary elementwise instruction whose operand `uniform` (0 or 1) is one value
// for the whole block (read at element 0), or nullptr when there is none.
BlockFn ResolveUniformOperandBlockFn(const HloInstruction& instr, int uniform);
// The typed block loop of convert from `from` to `to`, or nullptr.
BlockFn ResolveConvertBlockFn(PrimitiveType from, PrimitiveType to);

// Generic elementwise op through an evaluator ElementFn, one element at a time.
void GenericElementwiseBlock(const ExprOp& op, int64_t n, void* const* ptrs);

// o[i] = exp(a[i]) for f32 with Eigen's packet exp and libm's answers at the borders (Note
// [Vectorized f32 transcendentals] in expr_elementwise.cc); o and a do not overlap. Also used by
// the fused attention kernel (kernels/attention.cc).
void VectorExpF32(const float* a, float* o, int64_t n);

// ---- Execution helpers (expr_exec.cc) ----

// Computes the runs of `map` from its parent's runs (or from the block for kLoop).
void ComputeMapRuns(const ExprMap& map, const std::vector<ExprRun>& parent, int64_t start,
                    int64_t n, const std::vector<void*>& invariant_ptrs, std::vector<ExprRun>& out);

// Reads a scalar index value (any integer type) as int64 clamped into [0, hi] (u64 values
// above INT64_MAX clamp to hi).
int64_t ClampedIndexValue(const void* p, PrimitiveType t, int64_t hi);

}  // namespace kiln::cpu::internal
