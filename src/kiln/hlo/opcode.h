// HLO opcodes: every opcode in XLA's list, with its text name and arity.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// V(enum, text, arity); arity -1 means variadic.
#define KILN_HLO_OPCODE_LIST(V)                                   \
  V(kAbs, "abs", 1)                                               \
  V(kAcos, "acos", 1)                                             \
  V(kAcosh, "acosh", 1)                                           \
  V(kAdd, "add", 2)                                               \
  V(kAddDependency, "add-dependency", 2)                          \
  V(kAfterAll, "after-all", -1)                                   \
  V(kAllGather, "all-gather", -1)                                 \
  V(kAllGatherDone, "all-gather-done", 1)                         \
  V(kAllGatherStart, "all-gather-start", -1)                      \
  V(kAllReduce, "all-reduce", -1)                                 \
  V(kAllReduceDone, "all-reduce-done", 1)                         \
  V(kAllReduceStart, "all-reduce-start", -1)                      \
  V(kAllToAll, "all-to-all", -1)                                  \
  V(kAnd, "and", 2)                                               \
  V(kAsin, "asin", 1)                                             \
  V(kAsinh, "asinh", 1)                                           \
  V(kAsyncDone, "async-done", 1)                                  \
  V(kAsyncStart, "async-start", -1)                               \
  V(kAsyncUpdate, "async-update", -1)                             \
  V(kAtan, "atan", 1)                                             \
  V(kAtan2, "atan2", 2)                                           \
  V(kAtanh, "atanh", 1)                                           \
  V(kBatchNormGrad, "batch-norm-grad", 5)                         \
  V(kBatchNormInference, "batch-norm-inference", 5)               \
  V(kBatchNormTraining, "batch-norm-training", 3)                 \
  V(kBitcast, "bitcast", 1)                                       \
  V(kBitcastConvert, "bitcast-convert", 1)                        \
  V(kBroadcast, "broadcast", 1)                                   \
  V(kCall, "call", -1)                                            \
  V(kCbrt, "cbrt", 1)                                             \
  V(kCeil, "ceil", 1)                                             \
  V(kCholesky, "cholesky", 1)                                     \
  V(kClamp, "clamp", 3)                                           \
  V(kClz, "count-leading-zeros", 1)                               \
  V(kCollectiveBroadcast, "collective-broadcast", -1)             \
  V(kCollectivePermute, "collective-permute", -1)                 \
  V(kCollectivePermuteDone, "collective-permute-done", 1)         \
  V(kCollectivePermuteStart, "collective-permute-start", -1)      \
  V(kCollectiveReduce, "collective-reduce", -1)                   \
  V(kCompare, "compare", 2)                                       \
  V(kComplex, "complex", 2)                                       \
  V(kConcatenate, "concatenate", -1)                              \
  V(kConditional, "conditional", -1)                              \
  V(kConstant, "constant", 0)                                     \
  V(kConvert, "convert", 1)                                       \
  V(kConvolution, "convolution", -1)                              \
  V(kCopy, "copy", 1)                                             \
  V(kCopyDone, "copy-done", 1)                                    \
  V(kCopyStart, "copy-start", 1)                                  \
  V(kCos, "cosine", 1)                                            \
  V(kCosh, "cosh", 1)                                             \
  V(kCustomCall, "custom-call", -1)                               \
  V(kDivide, "divide", 2)                                         \
  V(kDomain, "domain", 1)                                         \
  V(kDot, "dot", 2)                                               \
  V(kDynamicReshape, "dynamic-reshape", -1)                       \
  V(kDynamicSlice, "dynamic-slice", -1)                           \
  V(kDynamicUpdateSlice, "dynamic-update-slice", -1)              \
  V(kErf, "erf", 1)                                               \
  V(kExp, "exponential", 1)                                       \
  V(kExpm1, "exponential-minus-one", 1)                           \
  V(kFft, "fft", 1)                                               \
  V(kFloor, "floor", 1)                                           \
  V(kFusion, "fusion", -1)                                        \
  V(kGather, "gather", 2)                                         \
  V(kGetDimensionSize, "get-dimension-size", 1)                   \
  V(kGetTupleElement, "get-tuple-element", 1)                     \
  V(kImag, "imag", 1)                                             \
  V(kInfeed, "infeed", 1)                                         \
  V(kIota, "iota", 0)                                             \
  V(kIsFinite, "is-finite", 1)                                    \
  V(kLog, "log", 1)                                               \
  V(kLog1p, "log-plus-one", 1)                                    \
  V(kLogistic, "logistic", 1)                                     \
  V(kMap, "map", -1)                                              \
  V(kMaximum, "maximum", 2)                                       \
  V(kMinimum, "minimum", 2)                                       \
  V(kMulhi, "mulhi", 2)                                           \
  V(kMultiply, "multiply", 2)                                     \
  V(kNegate, "negate", 1)                                         \
  V(kNot, "not", 1)                                               \
  V(kOptimizationBarrier, "opt-barrier", 1)                       \
  V(kOr, "or", 2)                                                 \
  V(kOutfeed, "outfeed", 2)                                       \
  V(kPad, "pad", 2)                                               \
  V(kParameter, "parameter", 0)                                   \
  V(kPartitionId, "partition-id", 0)                              \
  V(kPopulationCount, "popcnt", 1)                                \
  V(kPower, "power", 2)                                           \
  V(kRaggedAllToAll, "ragged-all-to-all", 6)                      \
  V(kRaggedDot, "ragged-dot", 3)                                  \
  V(kReal, "real", 1)                                             \
  V(kRecv, "recv", 1)                                             \
  V(kRecvDone, "recv-done", 1)                                    \
  V(kReduce, "reduce", -1)                                        \
  V(kReducePrecision, "reduce-precision", 1)                      \
  V(kReduceScatter, "reduce-scatter", -1)                         \
  V(kReduceWindow, "reduce-window", -1)                           \
  V(kRemainder, "remainder", 2)                                   \
  V(kReplicaId, "replica-id", 0)                                  \
  V(kReshape, "reshape", 1)                                       \
  V(kReverse, "reverse", 1)                                       \
  V(kRng, "rng", -1)                                              \
  V(kRngBitGenerator, "rng-bit-generator", 1)                     \
  V(kRngGetAndUpdateState, "rng-get-and-update-state", 0)         \
  V(kRoundNearestAfz, "round-nearest-afz", 1)                     \
  V(kRoundNearestEven, "round-nearest-even", 1)                   \
  V(kRsqrt, "rsqrt", 1)                                           \
  V(kScaledDot, "scaled-dot", 4)                                  \
  V(kScan, "scan", -1)                                            \
  V(kScatter, "scatter", -1)                                      \
  V(kSelect, "select", 3)                                         \
  V(kSelectAndScatter, "select-and-scatter", 3)                   \
  V(kSend, "send", 2)                                             \
  V(kSendDone, "send-done", 1)                                    \
  V(kSetDimensionSize, "set-dimension-size", 2)                   \
  V(kShiftLeft, "shift-left", 2)                                  \
  V(kShiftRightArithmetic, "shift-right-arithmetic", 2)           \
  V(kShiftRightLogical, "shift-right-logical", 2)                 \
  V(kShuffle, "shuffle", 1)                                       \
  V(kSign, "sign", 1)                                             \
  V(kSin, "sine", 1)                                              \
  V(kSinh, "sinh", 1)                                             \
  V(kSlice, "slice", 1)                                           \
  V(kSort, "sort", -1)                                            \
  V(kSqrt, "sqrt", 1)                                             \
  V(kStochasticConvert, "stochastic-convert", 2)                  \
  V(kSubtract, "subtract", 2)                                     \
  V(kTan, "tan", 1)                                               \
  V(kTanh, "tanh", 1)                                             \
  V(kTopK, "topk", 1)                                             \
  V(kTranspose, "transpose", 1)                                   \
  V(kTriangularSolve, "triangular-solve", 2)                      \
  V(kTuple, "tuple", -1)                                          \
  V(kWhile, "while", 1)                                           \
  V(kXor, "xor", 2)

enum class HloOpcode : uint8_t {
#define KILN_DECLARE_OPCODE(e, name, arity) e,
  KILN_HLO_OPCODE_LIST(KILN_DECLARE_OPCODE)
#undef KILN_DECLARE_OPCODE
};

std::string_view HloOpcodeString(HloOpcode op);
std::optional<HloOpcode> ParseHloOpcode(std::string_view name);
// Fixed operand count, or nullopt for variadic opcodes.
std::optional<int> HloOpcodeArity(HloOpcode op);
int HloOpcodeCount();

// Elementwise unary/binary/ternary ops (the ones computed element by element from operands of
// the result's shape): abs, add, compare, select, clamp, convert, ... map is elementwise too.
bool IsElementwiseOpcode(HloOpcode op);
bool IsElementwiseUnary(HloOpcode op);
bool IsElementwiseBinary(HloOpcode op);
bool IsCollectiveOpcode(HloOpcode op);
bool IsAsyncOpcode(HloOpcode op);

}  // namespace kiln
