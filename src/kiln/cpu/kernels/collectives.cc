// Native collective kernels on host memory, through the run's Communicator and Rendezvous
// (cpu/collective_context.h, eval/communicator.h): every collective XLA has, with the groups of
// eval/collective_groups.h and the instruction read by eval/collective_ops.h, as the evaluator
// does -- none runs the evaluator's kernel.
//
//   all-reduce, reduce-scatter  one add / multiply / minimum / maximum (and / or on pred) of
//                         the parameters: the communicator's reduction; any other scalar
//                         reduction computation: the members' operands all-gathered, then
//                         folded here in rank order by the computation compiled to a
//                         ScalarProgram (eval/scalar_program.h), element for element the
//                         evaluator's result
//   all-gather, all-to-all (array and tuple forms), collective-permute, collective-broadcast
//   ragged-all-to-all     the sizes and output offsets exchanged by an all-to-all, then the
//                         rows by the communicator's AllToAllV
//   send / recv / send-done / recv-done  a send posts a copy of its data at the rendezvous for
//                         each target and returns; recv-done takes it (zeros without a source)
//   replica-id, partition-id, the -start forms and their -done
// A collective along a dimension other than the major one is rearranged into rank-major chunks
// around the communicator call. Collectives inside async-start wrappers run as the work they
// wrap (passes/async_inliner.h). Not here: host transfers (is_host_transfer) and the in-place
// collective-permute, which the evaluator refuses too.
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/collective_context.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/eval/collective_ops.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu::internal {
namespace {

// The context of a run, or one of a participant by itself.
struct ContextOf {
  explicit ContextOf(const KernelContext& ctx) : cc(ctx.collectives) {
    if (cc != nullptr) return;
    alone.rendezvous = std::make_shared<Rendezvous>(1);
    own = std::make_unique<InProcessCommunicator>(alone.rendezvous);
    alone.communicator = own.get();
    cc = &alone;
  }
  CollectiveContext alone;
  std::unique_ptr<InProcessCommunicator> own;
  const CollectiveContext* cc;
};

std::string MeetingKey(const HloInstruction& instr, int64_t occurrence, std::span<const int64_t> group) {
  return StrCat(HloOpcodeString(instr.opcode()), " %", instr.name(), " #", occurrence, " among {",
                StrJoin(group, ","), "}");
}

// The reduction of an all-reduce / reduce-scatter: the communicator's, or a scalar program.
struct Reduction {
  std::optional<ReductionKind> kind;
  std::unique_ptr<ScalarProgram> program;  // when kind is unset
};

class CollectiveKernel final : public CpuKernel {
 public:
  CollectiveKernel(const HloInstruction& instr, Reduction reduction)
      : instr_(instr), op_(CollectiveSyncOpcode(instr.opcode())), reduction_(std::move(reduction)) {}

  std::string name() const override {
    std::string r;
    if (reduction_.kind) r = StrCat(" ", ReductionKindString(*reduction_.kind));
    if (reduction_.program) r = StrCat(" ", instr_.called_computations()[0]->name());
    return StrCat("collective[", HloOpcodeString(instr_.opcode()), " ", ShapeText(instr_.shape()), r, "]");
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    ContextOf context(ctx);
    const CollectiveContext* cc = context.cc;
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
        if (outputs[k].data != inputs[k].data) std::memcpy(outputs[k].data, inputs[k].data, inputs[k].byte_size());
      for (size_t k = 2 * n_ops; k < outputs.size(); ++k) std::memset(outputs[k].data, 0, outputs[k].byte_size());
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
    const std::string key = MeetingKey(instr_, occurrence, group);
    Communicator& comm = *cc->communicator;
    const int64_t d = CollectiveDimension(instr_);
    if (op_ == HloOpcode::kAllToAll && instr_.attrs().dimensions.empty()) {
      if (static_cast<int64_t>(n_ops) != n) return InvalidArgument(name(), ": ", n_ops, " operands for a group of ", n);
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
          if (reduction_.kind) {
            KILN_RETURN_IF_ERROR(comm.AllReduce(call, t, *reduction_.kind, src, dst, in.shape.num_elements()));
          } else {
            KILN_RETURN_IF_ERROR(GatherAndFold(comm, call, in, n, 0, dst));
          }
          break;
        case HloOpcode::kCollectiveBroadcast:
          KILN_RETURN_IF_ERROR(comm.Broadcast(call, src, dst, in.byte_size(), 0));
          break;
        case HloOpcode::kAllGather: {
          const Slabs s = SlabsOf(in.shape, d);
          if (s.outer == 1) {
            KILN_RETURN_IF_ERROR(comm.AllGather(call, src, dst, in.byte_size()));
          } else {
            std::vector<uint8_t> chunks(in.byte_size() * n);
            KILN_RETURN_IF_ERROR(comm.AllGather(call, src, chunks.data(), in.byte_size()));
            FromRankMajorChunks(chunks.data(), s.outer, n, s.inner_bytes, dst);
          }
          break;
        }
        case HloOpcode::kReduceScatter:
        case HloOpcode::kAllToAll: {
          if (in.shape.rank() == 0 || d >= in.shape.rank() || in.shape.dimensions(d) % n != 0)
            return InvalidArgument(name(), ": dimension ", d, " does not split into ", n, " chunks");
          const Slabs s = SlabsOf(in.shape, d);
          const int64_t piece = s.inner_bytes / n;
          const uint8_t* chunked = src;
          std::vector<uint8_t> tmp;
          if (s.outer != 1) {
            tmp.resize(in.byte_size());
            ToRankMajorChunks(src, s.outer, n, piece, tmp.data());
            chunked = tmp.data();
          }
          if (op_ == HloOpcode::kReduceScatter) {
            if (reduction_.kind) {
              KILN_RETURN_IF_ERROR(comm.ReduceScatter(call, t, *reduction_.kind, chunked, dst, in.shape.num_elements() / n));
            } else {
              ArrayView whole{const_cast<uint8_t*>(chunked), in.shape};
              KILN_RETURN_IF_ERROR(GatherAndFold(comm, call, whole, n, rank * (in.byte_size() / n), dst));
            }
          } else if (s.outer == 1) {
            KILN_RETURN_IF_ERROR(comm.AllToAll(call, chunked, dst, in.byte_size() / n));
          } else {
            std::vector<uint8_t> got(in.byte_size());
            KILN_RETURN_IF_ERROR(comm.AllToAll(call, chunked, got.data(), in.byte_size() / n));
            FromRankMajorChunks(got.data(), s.outer, n, piece, dst);
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
  // A reduction the communicator does not compute: every member's `in` gathered, then
  // dst = f(...f(f(x_0, x_1), x_2)..., x_{n-1}) elementwise over the bytes of `in` from
  // `offset` on (as many as dst holds: the whole array, or one reduce-scatter chunk).
  Status GatherAndFold(Communicator& comm, const CollectiveCall& call, const ArrayView& in, int64_t n,
                       int64_t offset, uint8_t* dst) const {
    const int64_t bytes = in.byte_size();
    std::vector<uint8_t> all(bytes * n);
    KILN_RETURN_IF_ERROR(comm.AllGather(call, in.data, all.data(), bytes));
    const int w = PrimitiveByteWidth(in.shape.element_type());
    const int64_t out_bytes = op_ == HloOpcode::kReduceScatter ? bytes / n : bytes;
    std::memcpy(dst, all.data() + offset, out_bytes);
    const ScalarProgram& f = *reduction_.program;
    for (int64_t r = 1; r < n; ++r) {
      const uint8_t* x = all.data() + r * bytes + offset;
      for (int64_t i = 0; i < out_bytes; i += w) {
        const void* args[2] = {dst + i, x + i};
        void* res[1] = {dst + i};
        f.Run(args, res);
      }
    }
    return OkStatus();
  }

  Status Permute(const CollectiveContext& cc, int64_t occurrence, std::span<const ArrayView> inputs,
                 std::span<const ArrayView> results) const {
    KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(instr_, cc.grid, cc.device));
    KILN_ASSIGN_OR_RETURN(PeerPairs peers, PeersOf(instr_, instr_.attrs().source_target_pairs, dom.my_id,
                                                   static_cast<int64_t>(dom.devices.size())));
    CollectiveCall call{"", dom.devices, dom.my_id};
    const std::string key = MeetingKey(instr_, occurrence, dom.devices);
    for (size_t k = 0; k < inputs.size(); ++k) {
      call.key = inputs.size() == 1 ? key : StrCat(key, " operand ", k);
      KILN_RETURN_IF_ERROR(cc.communicator->Permute(call, inputs[k].data, results[k].data, inputs[k].byte_size(),
                                                    peers.source));
    }
    return OkStatus();
  }

  const HloInstruction& instr_;
  HloOpcode op_;
  Reduction reduction_;
};

// ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes):
// rows input[input_offsets[j*k+u] ..][:send_sizes[j*k+u]] go to member j, which writes them at
// the sender's output_offsets[j*k+u]; the rest of the result is `output`.
class RaggedAllToAllKernel final : public CpuKernel {
 public:
  explicit RaggedAllToAllKernel(const HloInstruction& instr) : instr_(instr) {}
  std::string name() const override {
    return StrCat("collective[ragged-all-to-all ", ShapeText(instr_.shape()), "]");
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 6 || outputs.size() != 1) return Internal(name(), ": 6 inputs and one output expected");
    ContextOf context(ctx);
    const CollectiveContext* cc = context.cc;
    const int64_t occurrence = cc->NextOccurrence(&instr_);
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> group, CollectiveGroupOf(instr_, cc->grid, cc->device));
    const int64_t n = static_cast<int64_t>(group.size());
    int64_t rank = -1;
    for (int64_t i = 0; i < n; ++i)
      if (group[i] == cc->device) rank = i;
    if (rank < 0) return Internal(name(), ": device ", cc->device, " not in its group");
    const int64_t entries = inputs[2].shape.num_elements();
    if (entries == 0 || entries % n != 0)
      return InvalidArgument("ragged-all-to-all %", instr_.name(), ": ", entries, " offsets do not divide among ", n,
                             " members");
    for (int i = 3; i < 5; ++i)
      if (inputs[i].shape.num_elements() != entries)
        return InvalidArgument("ragged-all-to-all %", instr_.name(), ": operand ", i, " has ",
                               inputs[i].shape.num_elements(), " entries, expected ", entries);
    const int64_t per = entries / n;
    const Shape& in_shape = inputs[0].shape;
    const Shape& out_shape = outputs[0].shape;
    if (in_shape.rank() < 1 || out_shape.rank() < 1)
      return InvalidArgument("ragged-all-to-all %", instr_.name(), " needs rank >= 1");
    const int64_t row_bytes = SlabsOf(out_shape, 1).inner_bytes;
    const int64_t in_rows = in_shape.dimensions(0), out_rows = out_shape.dimensions(0);
    if (outputs[0].data != inputs[1].data) std::memcpy(outputs[0].data, inputs[1].data, outputs[0].byte_size());
    // What this member sends, and (exchanged) what each member sends it: (output offset, size).
    std::vector<BufferPiece> send_pieces(entries), recv_pieces(entries);
    std::vector<int64_t> meta(2 * entries), got(2 * entries);
    for (int64_t e = 0; e < entries; ++e) {
      const int64_t in_off = Entry(inputs[2], e), size = Entry(inputs[3], e), out_off = Entry(inputs[4], e);
      if (size != 0 && (in_off < 0 || size < 0 || in_off + size > in_rows))
        return InvalidArgument("ragged-all-to-all %", instr_.name(), ": member ", rank, " sends rows [", in_off, ", ",
                               in_off + size, ") of ", in_rows);
      send_pieces[e] = {size == 0 ? 0 : in_off * row_bytes, size * row_bytes};
      meta[2 * e] = out_off;
      meta[2 * e + 1] = size;
    }
    const std::string key = MeetingKey(instr_, occurrence, group);
    CollectiveCall call{StrCat(key, " sizes"), group, rank};
    KILN_RETURN_IF_ERROR(cc->communicator->AllToAll(call, meta.data(), got.data(), 2 * per * 8));
    for (int64_t e = 0; e < entries; ++e) {
      const int64_t out_off = got[2 * e], size = got[2 * e + 1];
      if (size != 0 && (out_off < 0 || out_off + size > out_rows))
        return InvalidArgument("ragged-all-to-all %", instr_.name(), ": member ", e / per, " sends rows to rows [",
                               out_off, ", ", out_off + size, ") of ", out_rows);
      recv_pieces[e] = {size == 0 ? 0 : out_off * row_bytes, size * row_bytes};
    }
    call.key = key;
    return cc->communicator->AllToAllV(call, inputs[0].data, send_pieces, outputs[0].data, recv_pieces);
  }

 private:
  static int64_t Entry(const ArrayView& v, int64_t i) {
    switch (v.shape.element_type()) {
      case PrimitiveType::kS32: return v.as<const int32_t>()[i];
      case PrimitiveType::kU32: return v.as<const uint32_t>()[i];
      case PrimitiveType::kU64: return static_cast<int64_t>(v.as<const uint64_t>()[i]);
      default: return v.as<const int64_t>()[i];
    }
  }

  const HloInstruction& instr_;
};

// send / recv / send-done / recv-done between participants (docs/collectives.md): a send posts
// a copy of its data at the run's rendezvous (collective_context.h) for each of its targets,
// keyed by channel, sender, receiver and occurrence; recv-done takes it.
class SendRecvKernel final : public CpuKernel {
 public:
  explicit SendRecvKernel(const HloInstruction& instr) : instr_(instr) {}
  std::string name() const override {
    return StrCat("collective[", HloOpcodeString(instr_.opcode()), " channel ", instr_.attrs().channel_id.value_or(0), "]");
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    const HloOpcode op = instr_.opcode();
    if (op == HloOpcode::kSendDone) return OkStatus();
    if (op == HloOpcode::kRecv) {
      for (const ArrayView& o : outputs) std::memset(o.data, 0, o.byte_size());  // data arrives at recv-done
      return OkStatus();
    }
    if (ctx.collectives == nullptr)
      return FailedPrecondition(name(), ": a send or recv-done needs the run's rendezvous (cpu executable)");
    const CollectiveContext& cc = *ctx.collectives;
    KILN_ASSIGN_OR_RETURN(auto pairs, SendRecvPairsOf(instr_));
    KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(instr_, cc.grid, cc.device));
    KILN_ASSIGN_OR_RETURN(PeerPairs peers, PeersOf(instr_, pairs, dom.my_id, static_cast<int64_t>(dom.devices.size())));
    const int64_t occurrence = cc.NextOccurrence(&instr_);
    if (op == HloOpcode::kSend) {
      // (data, token) -> (data, context, token)
      if (inputs.size() != 1 || outputs.empty()) return Internal(name(), ": (data) in, (data, context) out expected");
      const ArrayView& data = inputs[0];
      if (outputs[0].data != data.data) std::memcpy(outputs[0].data, data.data, data.byte_size());
      for (size_t k = 1; k < outputs.size(); ++k) std::memset(outputs[k].data, 0, outputs[k].byte_size());
      for (int64_t t : peers.targets) {
        const auto* p = static_cast<const uint8_t*>(data.data);
        auto copy = std::make_shared<const std::vector<uint8_t>>(p, p + data.byte_size());
        KILN_RETURN_IF_ERROR(cc.rendezvous->Post(Key(dom.devices[dom.my_id], dom.devices[t], occurrence), std::move(copy)));
      }
      return OkStatus();
    }
    // recv-done: (data, context) of the recv -> (data)
    if (outputs.size() != 1) return Internal(name(), ": one output expected");
    const ArrayView& out = outputs[0];
    if (!peers.source) {
      std::memset(out.data, 0, out.byte_size());
      return OkStatus();
    }
    const int64_t from = dom.devices[*peers.source];
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const void> v, cc.rendezvous->Take(Key(from, cc.device, occurrence), from));
    const auto& got = *static_cast<const std::vector<uint8_t>*>(v.get());
    if (static_cast<int64_t>(got.size()) != out.byte_size())
      return InvalidArgument("recv-done %", instr_.name(), ": received ", got.size(), " bytes, expected ", out.byte_size());
    if (!got.empty()) std::memcpy(out.data, got.data(), got.size());
    return OkStatus();
  }

 private:
  std::string Key(int64_t from, int64_t to, int64_t occurrence) const {
    return StrCat("send/recv channel ", instr_.attrs().channel_id.value_or(0), " from ", from, " to ", to, " #",
                  occurrence);
  }
  const HloInstruction& instr_;
};

size_t CountArrayLeaves(const Shape& s) {
  if (!s.IsTuple()) return s.IsArray() ? 1 : 0;
  size_t n = 0;
  for (const Shape& e : s.tuple_shapes()) n += CountArrayLeaves(e);
  return n;
}

// all-reduce-done, all-gather-done, collective-permute-done: the start's result (the start
// itself when its shape is the result's, else its tuple element 1), copied where buffer
// assignment did not make it the same memory.
class CollectiveDoneKernel final : public CpuKernel {
 public:
  CollectiveDoneKernel(const HloInstruction& instr, size_t first) : instr_(instr), first_(first) {}
  std::string name() const override {
    return StrCat("collective[", HloOpcodeString(instr_.opcode()), " ", ShapeText(instr_.shape()), "]");
  }
  bool SupportsInPlace(int64_t, int64_t) const override { return true; }
  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs, const KernelContext&) const override {
    if (first_ + outputs.size() > inputs.size()) return Internal(name(), ": the start has too few arrays");
    for (size_t k = 0; k < outputs.size(); ++k) {
      const ArrayView& in = inputs[first_ + k];
      if (in.byte_size() != outputs[k].byte_size()) return Internal(name(), ": result ", k, " sizes differ");
      if (outputs[k].data != in.data) std::memcpy(outputs[k].data, in.data, in.byte_size());
    }
    return OkStatus();
  }

 private:
  const HloInstruction& instr_;
  size_t first_;  // the start's array leaf the result begins at
};

StatusOr<Reduction> ReductionOf(const HloInstruction& instr) {
  if (instr.called_computations().empty()) return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " has no to_apply");
  const HloComputation& f = *instr.called_computations()[0];
  Reduction r;
  r.kind = MatchReduction(f);
  bool complex = false;
  for (const HloInstruction* o : instr.operands()) complex |= IsComplexType(o->shape().element_type());
  if (r.kind && complex && (*r.kind == ReductionKind::kMin || *r.kind == ReductionKind::kMax)) r.kind.reset();
  if (r.kind) return r;
  r.program = ScalarProgram::Compile(f);
  if (!r.program) return Unimplemented("the reduction computation ", f.name(), " is not a scalar computation");
  for (const HloInstruction* o : instr.operands()) {
    const PrimitiveType t = o->shape().element_type();
    if (r.program->num_parameters() != 2 || r.program->num_results() != 1 || r.program->parameter_type(0) != t ||
        r.program->parameter_type(1) != t || r.program->result_type(0) != t)
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": the reduction computation ", f.name(),
                             " does not take and return two ", PrimitiveTypeName(t), " scalars");
  }
  return r;
}

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateCollectiveKernel(const HloInstruction& instr,
                                                            const CpuKernelOptions&) {
  const HloOpcode op = CollectiveSyncOpcode(instr.opcode());
  switch (op) {
    case HloOpcode::kAllReduceDone: case HloOpcode::kAllGatherDone: case HloOpcode::kCollectivePermuteDone: {
      if (instr.operand_count() != 1) return InvalidArgument(HloOpcodeString(op), " %", instr.name(), " takes one operand");
      const Shape& start = instr.operand(0)->shape();
      if (Shape::Compatible(start, instr.shape())) return std::unique_ptr<CpuKernel>(new CollectiveDoneKernel(instr, 0));
      if (!start.IsTuple() || start.tuple_shapes_size() < 2 || !Shape::Compatible(start.tuple_shapes(1), instr.shape()))
        return InvalidArgument(HloOpcodeString(op), " %", instr.name(), ": operand ", start.ToString(false),
                               " does not hold a ", instr.shape().ToString(false));
      return std::unique_ptr<CpuKernel>(new CollectiveDoneKernel(instr, CountArrayLeaves(start.tuple_shapes(0))));
    }
    case HloOpcode::kSend: case HloOpcode::kRecv: case HloOpcode::kSendDone: case HloOpcode::kRecvDone:
      if (instr.attrs().is_host_transfer) return Unimplemented("a host transfer");
      return std::unique_ptr<CpuKernel>(new SendRecvKernel(instr));
    default:
      break;
  }
  for (const HloInstruction* o : instr.operands())
    if (!o->shape().IsArray()) return Unimplemented("a collective of tuple operands");
  Reduction reduction;
  switch (op) {
    case HloOpcode::kReplicaId: case HloOpcode::kPartitionId: case HloOpcode::kAllGather:
    case HloOpcode::kAllToAll: case HloOpcode::kCollectiveBroadcast:
      break;
    case HloOpcode::kRaggedAllToAll:
      if (instr.operand_count() != 6) return InvalidArgument("ragged-all-to-all %", instr.name(), " takes 6 operands");
      return std::unique_ptr<CpuKernel>(new RaggedAllToAllKernel(instr));
    case HloOpcode::kCollectivePermute:
      if (IsInPlaceCollectivePermute(instr)) return Unimplemented("the in-place collective-permute");
      break;
    case HloOpcode::kAllReduce:
    case HloOpcode::kReduceScatter: {
      KILN_ASSIGN_OR_RETURN(reduction, ReductionOf(instr));
      break;
    }
    default:
      return Unimplemented("no native kernel for ", HloOpcodeString(instr.opcode()));
  }
  return std::unique_ptr<CpuKernel>(new CollectiveKernel(instr, std::move(reduction)));
}

}  // namespace kiln::cpu::internal
