#include "kiln/hlo/opcode.h"

namespace kiln {

std::string_view HloOpcodeString(HloOpcode op) {
  switch (op) {
#define KILN_OPCODE_NAME(e, name, arity) \
  case HloOpcode::e:                     \
    return name;
    KILN_HLO_OPCODE_LIST(KILN_OPCODE_NAME)
#undef KILN_OPCODE_NAME
  }
  return "unknown";
}

std::optional<HloOpcode> ParseHloOpcode(std::string_view name) {
#define KILN_OPCODE_PARSE(e, n, arity) \
  if (name == n) return HloOpcode::e;
  KILN_HLO_OPCODE_LIST(KILN_OPCODE_PARSE)
#undef KILN_OPCODE_PARSE
  return std::nullopt;
}

std::optional<int> HloOpcodeArity(HloOpcode op) {
  switch (op) {
#define KILN_OPCODE_ARITY(e, name, arity) \
  case HloOpcode::e:                      \
    return (arity) < 0 ? std::nullopt : std::optional<int>(arity);
    KILN_HLO_OPCODE_LIST(KILN_OPCODE_ARITY)
#undef KILN_OPCODE_ARITY
  }
  return std::nullopt;
}

int HloOpcodeCount() {
#define KILN_OPCODE_COUNT(e, name, arity) +1
  return 0 KILN_HLO_OPCODE_LIST(KILN_OPCODE_COUNT);
#undef KILN_OPCODE_COUNT
}

bool IsElementwiseUnary(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAbs: case HloOpcode::kAcos: case HloOpcode::kAcosh: case HloOpcode::kAsin:
    case HloOpcode::kAsinh: case HloOpcode::kAtan: case HloOpcode::kAtanh:
    case HloOpcode::kBitcastConvert: case HloOpcode::kCbrt: case HloOpcode::kCeil:
    case HloOpcode::kClz: case HloOpcode::kConvert: case HloOpcode::kCopy: case HloOpcode::kCos:
    case HloOpcode::kCosh: case HloOpcode::kErf: case HloOpcode::kExp: case HloOpcode::kExpm1:
    case HloOpcode::kFloor: case HloOpcode::kImag: case HloOpcode::kIsFinite:
    case HloOpcode::kLog: case HloOpcode::kLog1p: case HloOpcode::kLogistic:
    case HloOpcode::kNegate: case HloOpcode::kNot: case HloOpcode::kPopulationCount:
    case HloOpcode::kReal: case HloOpcode::kReducePrecision: case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven: case HloOpcode::kRsqrt: case HloOpcode::kSign:
    case HloOpcode::kSin: case HloOpcode::kSinh: case HloOpcode::kSqrt: case HloOpcode::kTan:
    case HloOpcode::kTanh:
      return true;
    default:
      return false;
  }
}

bool IsElementwiseBinary(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd: case HloOpcode::kAnd: case HloOpcode::kAtan2:
    case HloOpcode::kCompare: case HloOpcode::kComplex: case HloOpcode::kDivide:
    case HloOpcode::kMaximum: case HloOpcode::kMinimum: case HloOpcode::kMulhi:
    case HloOpcode::kMultiply: case HloOpcode::kOr: case HloOpcode::kPower:
    case HloOpcode::kRemainder: case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic: case HloOpcode::kShiftRightLogical:
    case HloOpcode::kStochasticConvert: case HloOpcode::kSubtract: case HloOpcode::kXor:
      return true;
    default:
      return false;
  }
}

bool IsElementwiseOpcode(HloOpcode op) {
  return IsElementwiseUnary(op) || IsElementwiseBinary(op) || op == HloOpcode::kSelect ||
         op == HloOpcode::kClamp || op == HloOpcode::kMap;
}

bool IsCollectiveOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllGather: case HloOpcode::kAllGatherStart: case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart: case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast: case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart: case HloOpcode::kCollectiveReduce:
    case HloOpcode::kRaggedAllToAll: case HloOpcode::kReduceScatter:
      return true;
    default:
      return false;
  }
}

bool IsAsyncOpcode(HloOpcode op) {
  return op == HloOpcode::kAsyncStart || op == HloOpcode::kAsyncUpdate ||
         op == HloOpcode::kAsyncDone;
}

}  // namespace kiln
