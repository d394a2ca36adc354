#include "kiln/eval/collective_ops.h"

#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/collective_groups.h"
#include "kiln/hlo/computation.h"

namespace kiln {

HloOpcode CollectiveSyncOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllReduceStart: return HloOpcode::kAllReduce;
    case HloOpcode::kAllGatherStart: return HloOpcode::kAllGather;
    case HloOpcode::kCollectivePermuteStart: return HloOpcode::kCollectivePermute;
    default: return op;
  }
}

const HloInstruction& UnwrapAsyncCollective(const HloInstruction& instr) {
  if (instr.opcode() == HloOpcode::kAsyncStart && !instr.called_computations().empty() &&
      instr.called_computations()[0]->root_instruction() != nullptr)
    return *instr.called_computations()[0]->root_instruction();
  return instr;
}

bool IsInPlaceCollectivePermute(const HloInstruction& instr) {
  const HloInstruction& op = UnwrapAsyncCollective(instr);
  if (CollectiveSyncOpcode(op.opcode()) != HloOpcode::kCollectivePermute) return false;
  // A -start's result is element 1 of its (operands, results, contexts...) tuple.
  const Shape& s = instr.opcode() == HloOpcode::kCollectivePermuteStart && instr.shape().IsTuple() &&
                           instr.shape().tuple_shapes_size() >= 2
                       ? instr.shape().tuple_shapes(1)
                       : op.shape();
  const int64_t results = s.IsTuple() ? s.tuple_shapes_size() : 1;
  return results != op.operand_count();
}

int64_t CollectiveDimension(const HloInstruction& instr) {
  return instr.attrs().dimensions.empty() ? 0 : instr.attrs().dimensions[0];
}

StatusOr<std::vector<std::pair<int64_t, int64_t>>> SendRecvPairsOf(const HloInstruction& instr) {
  StatusOr<std::vector<std::pair<int64_t, int64_t>>> p = SendRecvPairs(instr);
  if (p.ok() || instr.operand_count() == 0) return p;
  const HloInstruction* op = instr.operand(0);
  if (op->opcode() == HloOpcode::kRecv || op->opcode() == HloOpcode::kSend) {
    auto q = SendRecvPairs(*op);
    if (q.ok()) return q;
  }
  return p;
}

StatusOr<PeerPairs> PeersOf(const HloInstruction& instr, std::span<const std::pair<int64_t, int64_t>> pairs,
                            int64_t me, int64_t space) {
  PeerPairs out;
  for (const auto& [s, t] : pairs) {
    if (s < 0 || s >= space || t < 0 || t >= space)
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": pair {", s, ",", t,
                             "} outside the ", space, " ids of the run");
    if (t == me) {
      if (out.source)
        return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": two pairs target ", t);
      out.source = s;
    }
    if (s == me) out.targets.push_back(t);
  }
  return out;
}

Slabs SlabsOf(const Shape& s, int64_t d) {
  Slabs out;
  int64_t inner = PrimitiveByteWidth(s.element_type());
  for (int64_t i = 0; i < s.rank(); ++i) (i < d ? out.outer : inner) *= s.dimensions(i);
  out.inner_bytes = inner;
  return out;
}

void ToRankMajorChunks(const uint8_t* src, int64_t outer, int64_t n, int64_t piece, uint8_t* dst) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + (j * outer + o) * piece, src + (o * n + j) * piece, piece);
}

void FromRankMajorChunks(const uint8_t* src, int64_t outer, int64_t n, int64_t piece, uint8_t* dst) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + (o * n + j) * piece, src + (j * outer + o) * piece, piece);
}

}  // namespace kiln
