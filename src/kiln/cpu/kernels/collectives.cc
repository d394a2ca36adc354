// Native collective kernels: all-reduce (add/multiply/min/max reductions), all-gather,
// reduce-scatter, all-to-all (array and tuple forms), collective-permute, their -start forms,
// replica-id and partition-id, on host memory through the run's Communicator
// (cpu/collective_context.h, eval/communicator.h). Groups follow eval/collective_groups.h, as
// the evaluator's do. A collective along a dimension other than the major one is rearranged
// into rank-major chunks around the communicator call.
//
// Not here (the evaluator kernel runs them, meeting at the same rendezvous): an all-reduce
// with another reduction computation, ragged-all-to-all, collective-broadcast, send/recv,
// collectives inside async-start wrappers, the in-place collective-permute.
#include <cstring>
#include <optional>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/collective_context.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu::internal {
namespace {

HloOpcode SyncOf(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllReduceStart: return HloOpcode::kAllReduce;
    case HloOpcode::kAllGatherStart: return HloOpcode::kAllGather;
    case HloOpcode::kCollectivePermuteStart: return HloOpcode::kCollectivePermute;
    default: return op;
  }
}

// dst chunk j (of n), row o = src row o, chunk j: [outer][n][piece] -> [n][outer][piece].
void ToChunks(const uint8_t* src, int64_t outer, int64_t n, int64_t piece, uint8_t* dst) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + (j * outer + o) * piece, src + (o * n + j) * piece, piece);
}
// The inverse: [n][outer][piece] -> [outer][n][piece].
void FromChunks(const uint8_t* src, int64_t outer, int64_t n, int64_t piece, uint8_t* dst) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + (o * n + j) * piece, src + (j * outer + o) * piece, piece);
}

// Product of dims[0..d) and bytes of dims[d..].
std::pair<int64_t, int64_t> OuterAndInnerBytes(const Shape& s, int64_t d) {
  int64_t outer = 1, inner = PrimitiveByteWidth(s.element_type());
  for (int64_t i = 0; i < s.rank(); ++i) (i < d ? outer : inner) *= s.dimensions(i);
  return {outer, inner};
}

class CollectiveKernel final : public CpuKernel {
 public:
  CollectiveKernel(const HloInstruction& instr, std::optional<ReductionKind> reduction)
      : instr_(instr), op_(SyncOf(instr.opcode())), reduction_(reduction) {}

  std::string name() const override {
    return StrCat("collective[", HloOpcodeString(instr_.opcode()), " ", ShapeText(instr_.shape()),
                  reduction_ ? StrCat(" ", ReductionKindString(*reduction_)) : std::string(), "]");
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    CollectiveContext alone;  // a participant by itself
    const CollectiveContext* cc = ctx.collectives;
    std::unique_ptr<InProcessCommunicator> own;
    if (cc == nullptr) {
      alone.rendezvous = std::make_shared<Rendezvous>(1);
      own = std::make_unique<InProcessCommunicator>(alone.rendezvous);
      alone.communicator = own.get();
      cc = &alone;
    }
    if (op_ == HloOpcode::kReplicaId || op_ == HloOpcode::kPartitionId) {
      const int64_t id = op_ == HloOpcode::kReplicaId ? cc->replica_id() : cc->partition_id();
      if (outputs.size() != 1) return Internal(name(), ": one output expected");
      const uint32_t v = static_cast<uint32_t>(id);
      std::memcpy(outputs[0].data, &v, 4);
      return OkStatus();
    }
    const size_t n_ops = inputs.size();
    // Outputs: the results, or (start forms) operand copies, results, zeroed contexts.
    size_t first_result = 0;
    if (outputs.size() != n_ops) {
      if (outputs.size() < 2 * n_ops) return Internal(name(), ": unexpected outputs");
      first_result = n_ops;
      for (size_t k = 0; k < n_ops; ++k)
        if (outputs[k].data != inputs[k].data)
          std::memcpy(outputs[k].data, inputs[k].data, inputs[k].byte_size());
      for (size_t k = 2 * n_ops; k < outputs.size(); ++k)
        std::memset(outputs[k].data, 0, outputs[k].byte_size());
    }
    std::span<const ArrayView> results = outputs.subspan(first_result, n_ops);
    const int64_t occurrence = cc->NextOccurrence(&instr_);
    if (op_ == HloOpcode::kCollectivePermute) return Permute(*cc, occurrence, inputs, results);
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> group, CollectiveGroupOf(instr_, cc->grid, cc->device));
    int64_t rank = -1;
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] == cc->device) rank = static_cast<int64_t>(i);
    if (rank < 0) return Internal(name(), ": device ", cc->device, " not in its group");
    const int64_t n = static_cast<int64_t>(group.size());
    CollectiveCall call{"", group, rank};
    const std::string key = StrCat(HloOpcodeString(instr_.opcode()), " %", instr_.name(), " #",
                                   occurrence, " among {", StrJoin(group, ","), "}");
    Communicator& comm = *cc->communicator;
    const int64_t d = instr_.attrs().dimensions.empty() ? 0 : instr_.attrs().dimensions[0];
    const bool tuple_a2a = op_ == HloOpcode::kAllToAll && instr_.attrs().dimensions.empty();
    if (tuple_a2a) {
      if (static_cast<int64_t>(n_ops) != n)
        return InvalidArgument(name(), ": ", n_ops, " operands for a group of ", n);
      // Operand j goes to rank j: pack, exchange, unpack (equal shapes).
      const int64_t bytes = inputs[0].byte_size();
      std::vector<uint8_t> send(bytes * n), recv(bytes * n);
      for (int64_t j = 0; j < n; ++j) std::memcpy(send.data() + j * bytes, inputs[j].data, bytes);
      call.key = key;
      KILN_RETURN_IF_ERROR(comm.AllToAll(call, send.data(), recv.data(), bytes));
      for (int64_t j = 0; j < n; ++j) std::memcpy(results[j].data, recv.data() + j * bytes, bytes);
      return OkStatus();
    }
    for (size_t k = 0; k < n_ops; ++k) {
      call.key = n_ops == 1 ? key : StrCat(key, " operand ", k);
      const ArrayView& in = inputs[k];
      const ArrayView& out = results[k];
      const PrimitiveType t = in.shape.element_type();
      const auto* src = static_cast<const uint8_t*>(in.data);
      auto* dst = static_cast<uint8_t*>(out.data);
      switch (op_) {
        case HloOpcode::kAllReduce:
          KILN_RETURN_IF_ERROR(comm.AllReduce(call, t, *reduction_, src, dst, in.shape.num_elements()));
          break;
        case HloOpcode::kAllGather: {
          auto [outer, piece] = OuterAndInnerBytes(in.shape, d);
          if (outer == 1) {
            KILN_RETURN_IF_ERROR(comm.AllGather(call, src, dst, in.byte_size()));
          } else {
            std::vector<uint8_t> chunks(in.byte_size() * n);
            KILN_RETURN_IF_ERROR(comm.AllGather(call, src, chunks.data(), in.byte_size()));
            FromChunks(chunks.data(), outer, n, piece, dst);
          }
          break;
        }
        case HloOpcode::kReduceScatter:
        case HloOpcode::kAllToAll: {
          auto [outer, inner] = OuterAndInnerBytes(in.shape, d);
          if (in.shape.dimensions(d) % n != 0)
            return InvalidArgument(name(), ": dimension ", d, " does not split into ", n, " chunks");
          const int64_t piece = inner / n;
          const uint8_t* chunked = src;
          std::vector<uint8_t> tmp;
          if (outer != 1) {
            tmp.resize(in.byte_size());
            ToChunks(src, outer, n, piece, tmp.data());
            chunked = tmp.data();
          }
          if (op_ == HloOpcode::kReduceScatter) {
            KILN_RETURN_IF_ERROR(comm.ReduceScatter(call, t, *reduction_, chunked, dst,
                                                    in.shape.num_elements() / n));
          } else if (outer == 1) {
            KILN_RETURN_IF_ERROR(comm.AllToAll(call, chunked, dst, in.byte_size() / n));
          } else {
            std::vector<uint8_t> got(in.byte_size());
            KILN_RETURN_IF_ERROR(comm.AllToAll(call, chunked, got.data(), in.byte_size() / n));
            FromChunks(got.data(), outer, n, piece, dst);
          }
          break;
        }
        default:
          return Internal(name(), ": not a native collective");
      }
    }
    return OkStatus();
  }

 private:
  Status Permute(const CollectiveContext& cc, int64_t occurrence, std::span<const ArrayView> inputs,
                 std::span<const ArrayView> results) const {
    KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(instr_, cc.grid, cc.device));
    const int64_t space = static_cast<int64_t>(dom.devices.size());
    std::optional<int64_t> source;
    for (const auto& [s, t] : instr_.attrs().source_target_pairs) {
      if (s < 0 || s >= space || t < 0 || t >= space)
        return InvalidArgument(name(), ": pair {", s, ",", t, "} outside the ", space, " ids of the run");
      if (t == dom.my_id) source = s;
    }
    CollectiveCall call{"", dom.devices, dom.my_id};
    const std::string key = StrCat(HloOpcodeString(instr_.opcode()), " %", instr_.name(), " #",
                                   occurrence, " among {", StrJoin(dom.devices, ","), "}");
    for (size_t k = 0; k < inputs.size(); ++k) {
      call.key = inputs.size() == 1 ? key : StrCat(key, " operand ", k);
      KILN_RETURN_IF_ERROR(cc.communicator->Permute(call, inputs[k].data, results[k].data,
                                                    inputs[k].byte_size(), source));
    }
    return OkStatus();
  }

  const HloInstruction& instr_;
  HloOpcode op_;
  std::optional<ReductionKind> reduction_;
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateCollectiveKernel(const HloInstruction& instr,
                                                            const CpuKernelOptions&) {
  const HloOpcode op = SyncOf(instr.opcode());
  for (const HloInstruction* o : instr.operands())
    if (!o->shape().IsArray()) return Unimplemented("a collective of tuple operands");
  std::optional<ReductionKind> reduction;
  switch (op) {
    case HloOpcode::kReplicaId:
    case HloOpcode::kPartitionId:
    case HloOpcode::kAllGather:
      break;
    case HloOpcode::kAllToAll:
      break;
    case HloOpcode::kCollectivePermute: {
      // The simple forms: one result per operand.
      const Shape& s = instr.opcode() == HloOpcode::kCollectivePermuteStart && instr.shape().IsTuple() &&
                               instr.shape().tuple_shapes_size() >= 2
                           ? instr.shape().tuple_shapes(1)
                           : instr.shape();
      const int64_t results = s.IsTuple() ? s.tuple_shapes_size() : 1;
      if (results != instr.operand_count()) return Unimplemented("the in-place collective-permute");
      break;
    }
    case HloOpcode::kAllReduce:
    case HloOpcode::kReduceScatter: {
      if (instr.called_computations().empty()) return Unimplemented("no reduction computation");
      reduction = MatchReduction(*instr.called_computations()[0]);
      if (!reduction) return Unimplemented("an all-reduce with another reduction computation");
      for (const HloInstruction* o : instr.operands())
        if (IsComplexType(o->shape().element_type()) &&
            (*reduction == ReductionKind::kMin || *reduction == ReductionKind::kMax))
          return Unimplemented("min/max of complex values");
      break;
    }
    default:
      return Unimplemented("no native kernel for ", HloOpcodeString(instr.opcode()));
  }
  return std::unique_ptr<CpuKernel>(new CollectiveKernel(instr, reduction));
}

}  // namespace kiln::cpu::internal
