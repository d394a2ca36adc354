// Collectives, point-to-point transfers and asynchronous wrappers.
//
// A participant's collective meets the other members of its group (eval/collective_groups.h,
// Note [Participants]) at the run's Rendezvous (eval/rendezvous.h): each member offers a
// pointer to its operand values, and once all are there each computes its own result from
// everyone's values (rank order), so no value is copied before it is needed:
//   all-reduce            the members' operands combined elementwise by to_apply, in rank
//                         order (any reduction computation; one result per operand)
//   all-gather            the operands concatenated along dimensions={d}, rank order
//   reduce-scatter        the all-reduce's chunk `rank` along dimensions={d}
//   all-to-all            array form (dimensions={d}): chunk j of each operand goes to rank j,
//                         the received chunks are concatenated along d in rank order; tuple
//                         form (no dimensions, one operand per member): operand j goes to rank
//                         j, result element j is what rank j sent
//   ragged-all-to-all     (input, output, input_offsets, send_sizes, output_offsets,
//                         recv_sizes): the sender's rows input[input_offsets[j]..+send_sizes[j]]
//                         land in member j's output at the sender's output_offsets[j]; with
//                         k updates per member, update u of member j is entry j*k+u
//   collective-broadcast  rank 0's operands
//   collective-permute    the operands of the source s of a pair (s, me), zeros when no pair
//                         targets me (pairs in partition ids with a channel_id, replica ids
//                         without; every participant of that domain meets)
//   send / recv           send posts its data for each target of the frontend attribute
//                         _xla_send_recv_source_target_pairs (partition ids) and returns at
//                         once; recv-done waits for its source's data (zeros without a source)
// The meeting key is the op, its occurrence number in this participant's run and the group, so
// an op in a loop meets once per iteration and two groups of one op meet apart.
//
// Without a rendezvous (a plain Evaluator::Run) the evaluator is the only participant: a group
// with another member is UnsupportedInstruction, and a group of one computes from its own
// operands.
//
// The -start/-done forms: a start whose shape is the result's gives the result; a start with a
// tuple shape gives (operand(s), result, zero-filled context...); a done unwraps element 1 of
// a tuple start (or passes an array through). async-start runs its wrapped computation and
// gives ((operands...), result, zero-filled context...); async-update passes through;
// async-done takes element 1. copy-start gives (copy, operand, u32 context); copy-done takes
// element 0.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/collective_groups.h"
#include "kiln/eval/collective_ops.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/misc_internal.h"
#include "kiln/eval/rendezvous.h"
#include "kiln/eval/scalar_call.h"
#include "kiln/hlo/computation.h"

namespace kiln {
namespace {

using Operands = std::span<const Literal* const>;

// The value of all operands: one array, or a tuple of them.
Literal OperandsValue(Operands ops) {
  if (ops.size() == 1) return *ops[0];
  std::vector<Literal> parts;
  for (const Literal* l : ops) parts.push_back(*l);
  return Literal::MakeTuple(std::move(parts));
}

// One value per operand as the result: the value itself for one, a tuple for several.
Literal ResultOf(std::vector<Literal> parts) {
  if (parts.size() == 1) return std::move(parts[0]);
  return Literal::MakeTuple(std::move(parts));
}

DeviceGrid GridOf(const Evaluator& e) {
  const EvaluatorOptions& o = e.options();
  return DeviceGrid{std::max<int64_t>({1, o.replica_count, o.replica_id + 1}),
                    std::max<int64_t>({1, o.num_partitions, o.partition_id + 1})};
}
int64_t DeviceOf(const Evaluator& e) {
  return GridOf(e).DeviceId(e.options().replica_id, e.options().partition_id);
}

std::string AloneDetail(size_t members) {
  return StrCat("a collective over ", members,
                " participants (this evaluator runs alone; run the module over several: "
                "eval/participants.h, kiln run --replicas N --partitions M)");
}

// The group of `instr` on this participant, rank order, and this participant's rank.
struct Group {
  std::vector<int64_t> devices;
  int64_t rank = 0;
};
StatusOr<Group> GroupOf(const HloInstruction& instr, const Evaluator& e) {
  if (!e.options().rendezvous && instr.attrs().replica_groups) {
    for (const auto& g : instr.attrs().replica_groups->Groups())
      if (g.size() > 1) return UnsupportedInstruction(instr, AloneDetail(g.size()));
  }
  const DeviceGrid grid = GridOf(e);
  const int64_t me = DeviceOf(e);
  Group g;
  KILN_ASSIGN_OR_RETURN(g.devices, CollectiveGroupOf(instr, grid, me));
  auto it = std::find(g.devices.begin(), g.devices.end(), me);
  if (it == g.devices.end())
    return Internal(HloOpcodeString(instr.opcode()), " %", instr.name(), ": device ", me,
                    " not in its own group");
  g.rank = it - g.devices.begin();
  return g;
}

// Meets the other members of `group`: each offers its operands; `consume` runs with every
// member's operands (rank order) while all of them are held.
Status Meet(const HloInstruction& instr, Evaluator& e, const Group& group, Operands mine,
            const std::function<Status(std::span<const Operands* const>)>& consume) {
  const int64_t occurrence = e.NextOccurrence(instr);
  if (group.devices.size() == 1) {
    const Operands* one = &mine;
    return consume({&one, 1});
  }
  if (!e.options().rendezvous) return UnsupportedInstruction(instr, AloneDetail(group.devices.size()));
  const std::string key = StrCat(HloOpcodeString(instr.opcode()), " %", instr.name(), " #",
                                 occurrence, " among {", StrJoin(group.devices, ","), "}");
  return e.options().rendezvous->Exchange(
      key, group.devices, group.rank, &mine, [&](std::span<const void* const> ptrs) {
        std::vector<const Operands*> all;
        for (const void* p : ptrs) all.push_back(static_cast<const Operands*>(p));
        return consume(all);
      });
}

Status ExpectArrays(const HloInstruction& instr, Operands ops) {
  for (size_t i = 0; i < ops.size(); ++i)
    if (!ops[i]->shape().IsArray())
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ", i,
                             " is not an array");
  return OkStatus();
}

// Concatenates same-shaped arrays along d.
Literal Concat(std::span<const Literal* const> parts, int64_t d) {
  Shape s = parts[0]->shape();
  s.mutable_dimensions()[d] *= static_cast<int64_t>(parts.size());
  Literal out(s);
  const Slabs in = SlabsOf(parts[0]->shape(), d);
  uint8_t* dst = out.untyped_data();
  for (int64_t o = 0; o < in.outer; ++o)
    for (const Literal* p : parts) {
      std::memcpy(dst, p->untyped_data() + o * in.inner_bytes, in.inner_bytes);
      dst += in.inner_bytes;
    }
  return out;
}

// Chunk `j` of `n` equal chunks of `l` along d.
Literal Chunk(const Literal& l, int64_t d, int64_t n, int64_t j) {
  Shape s = l.shape();
  s.mutable_dimensions()[d] /= n;
  Literal out(s);
  const Slabs whole = SlabsOf(l.shape(), d);
  const int64_t piece = whole.inner_bytes / n;
  for (int64_t o = 0; o < whole.outer; ++o)
    std::memcpy(out.untyped_data() + o * piece, l.untyped_data() + o * whole.inner_bytes + j * piece,
                piece);
  return out;
}

// Chunk sizes must divide: InvalidArgument otherwise.
Status ExpectDivisible(const HloInstruction& instr, const Literal& l, int64_t d, int64_t n) {
  if (d < 0 || d >= l.shape().rank())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": dimension ", d,
                           " outside rank ", l.shape().rank());
  if (l.shape().dimensions(d) % n != 0)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": dimension ", d,
                           " of ", l.shape().ToString(false), " does not split into ", n, " chunks");
  return OkStatus();
}

// to_apply combined elementwise over the members' k-th operands, in rank order.
StatusOr<Literal> Reduce(const HloInstruction& instr, Evaluator& e,
                         std::span<const Operands* const> all, size_t k) {
  if (instr.called_computations().empty())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " has no to_apply");
  Literal acc = *(*all[0])[k];
  if (all.size() == 1) return acc;
  const PrimitiveType t = acc.shape().element_type();
  const PrimitiveType types[2] = {t, t};
  KILN_ASSIGN_OR_RETURN(auto call,
                        eval_internal::ScalarCall::Create(e, *instr.called_computations()[0], types, 1));
  const int w = PrimitiveByteWidth(t);
  const int64_t n = acc.element_count();
  for (size_t r = 1; r < all.size(); ++r) {
    const Literal& x = *(*all[r])[k];
    if (!Shape::Compatible(x.shape(), acc.shape()))
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": members disagree on operand shapes");
    for (int64_t i = 0; i < n; ++i) {
      const void* args[2] = {acc.untyped_data() + i * w, x.untyped_data() + i * w};
      void* res[1] = {acc.untyped_data() + i * w};
      KILN_RETURN_IF_ERROR(call.Run(args, res));
    }
  }
  return acc;
}

// ---- the synchronous collectives ----

StatusOr<Literal> AllReduce(const HloInstruction& instr, Operands ops, Evaluator& e) {
  KILN_RETURN_IF_ERROR(ExpectArrays(instr, ops));
  KILN_ASSIGN_OR_RETURN(Group g, GroupOf(instr, e));
  std::vector<Literal> parts;
  KILN_RETURN_IF_ERROR(Meet(instr, e, g, ops, [&](std::span<const Operands* const> all) -> Status {
    for (size_t k = 0; k < ops.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(Literal r, Reduce(instr, e, all, k));
      parts.push_back(std::move(r));
    }
    return OkStatus();
  }));
  return ResultOf(std::move(parts));
}

StatusOr<Literal> AllGather(const HloInstruction& instr, Operands ops, Evaluator& e) {
  KILN_RETURN_IF_ERROR(ExpectArrays(instr, ops));
  KILN_ASSIGN_OR_RETURN(Group g, GroupOf(instr, e));
  const int64_t d = CollectiveDimension(instr);
  for (const Literal* l : ops) KILN_RETURN_IF_ERROR(ExpectDivisible(instr, *l, d, 1));
  std::vector<Literal> parts;
  KILN_RETURN_IF_ERROR(Meet(instr, e, g, ops, [&](std::span<const Operands* const> all) -> Status {
    for (size_t k = 0; k < ops.size(); ++k) {
      std::vector<const Literal*> pieces;
      for (const Operands* m : all) {
        if (!Shape::Compatible((*m)[k]->shape(), ops[k]->shape()))
          return InvalidArgument("all-gather %", instr.name(), ": members disagree on shapes");
        pieces.push_back((*m)[k]);
      }
      parts.push_back(Concat(pieces, d));
    }
    return OkStatus();
  }));
  return ResultOf(std::move(parts));
}

StatusOr<Literal> ReduceScatter(const HloInstruction& instr, Operands ops, Evaluator& e) {
  KILN_RETURN_IF_ERROR(ExpectArrays(instr, ops));
  KILN_ASSIGN_OR_RETURN(Group g, GroupOf(instr, e));
  const int64_t d = CollectiveDimension(instr), n = static_cast<int64_t>(g.devices.size());
  for (const Literal* l : ops) KILN_RETURN_IF_ERROR(ExpectDivisible(instr, *l, d, n));
  std::vector<Literal> parts;
  KILN_RETURN_IF_ERROR(Meet(instr, e, g, ops, [&](std::span<const Operands* const> all) -> Status {
    for (size_t k = 0; k < ops.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(Literal r, Reduce(instr, e, all, k));
      parts.push_back(Chunk(r, d, n, g.rank));
    }
    return OkStatus();
  }));
  return ResultOf(std::move(parts));
}

StatusOr<Literal> AllToAll(const HloInstruction& instr, Operands ops, Evaluator& e) {
  KILN_RETURN_IF_ERROR(ExpectArrays(instr, ops));
  KILN_ASSIGN_OR_RETURN(Group g, GroupOf(instr, e));
  const int64_t n = static_cast<int64_t>(g.devices.size());
  const bool array_form = !instr.attrs().dimensions.empty();
  const int64_t d = CollectiveDimension(instr);
  if (array_form) {
    for (const Literal* l : ops) KILN_RETURN_IF_ERROR(ExpectDivisible(instr, *l, d, n));
  } else if (static_cast<int64_t>(ops.size()) != n) {
    return InvalidArgument("all-to-all %", instr.name(), " (tuple form) has ", ops.size(),
                           " operands for a group of ", n);
  }
  std::vector<Literal> parts;
  KILN_RETURN_IF_ERROR(Meet(instr, e, g, ops, [&](std::span<const Operands* const> all) -> Status {
    if (!array_form) {
      for (const Operands* m : all) parts.push_back(*(*m)[g.rank]);
      return OkStatus();
    }
    for (size_t k = 0; k < ops.size(); ++k) {
      std::vector<Literal> chunks;
      for (const Operands* m : all) chunks.push_back(Chunk(*(*m)[k], d, n, g.rank));
      std::vector<const Literal*> ptrs;
      for (const Literal& c : chunks) ptrs.push_back(&c);
      parts.push_back(Concat(ptrs, d));
    }
    return OkStatus();
  }));
  return ResultOf(std::move(parts));
}

StatusOr<Literal> RaggedAllToAll(const HloInstruction& instr, Operands ops, Evaluator& e) {
  if (ops.size() != 6)
    return InvalidArgument("ragged-all-to-all %", instr.name(), " takes 6 operands");
  KILN_RETURN_IF_ERROR(ExpectArrays(instr, ops));
  KILN_ASSIGN_OR_RETURN(Group g, GroupOf(instr, e));
  const int64_t n = static_cast<int64_t>(g.devices.size());
  const int64_t entries = ops[2]->element_count();
  if (entries % n != 0 || entries == 0)
    return InvalidArgument("ragged-all-to-all %", instr.name(), ": ", entries,
                           " offsets do not divide among ", n, " members");
  const int64_t per = entries / n;
  Literal out = *ops[1];
  const Shape& os = out.shape();
  if (os.rank() < 1) return InvalidArgument("ragged-all-to-all %", instr.name(), " needs rank >= 1");
  const int64_t row_bytes = os.rank() == 0 ? 0 : SlabsOf(os, 1).inner_bytes;
  const int64_t out_rows = os.dimensions(0);
  KILN_RETURN_IF_ERROR(Meet(instr, e, g, ops, [&](std::span<const Operands* const> all) -> Status {
    for (int64_t s = 0; s < n; ++s) {
      const Operands& src = *all[s];
      const int64_t in_rows = src[0]->shape().dimensions(0);
      for (int64_t u = 0; u < per; ++u) {
        const int64_t idx = g.rank * per + u;
        const int64_t in_off = src[2]->GetAsInt64(idx), size = src[3]->GetAsInt64(idx),
                      out_off = src[4]->GetAsInt64(idx);
        if (size == 0) continue;
        if (in_off < 0 || size < 0 || in_off + size > in_rows || out_off < 0 ||
            out_off + size > out_rows)
          return InvalidArgument("ragged-all-to-all %", instr.name(), ": member ", s,
                                 " sends rows [", in_off, ", ", in_off + size, ") of ", in_rows,
                                 " to rows [", out_off, ", ", out_off + size, ") of ", out_rows);
        std::memcpy(out.untyped_data() + out_off * row_bytes,
                    src[0]->untyped_data() + in_off * row_bytes, size * row_bytes);
      }
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<Literal> CollectiveBroadcast(const HloInstruction& instr, Operands ops, Evaluator& e) {
  KILN_RETURN_IF_ERROR(ExpectArrays(instr, ops));
  KILN_ASSIGN_OR_RETURN(Group g, GroupOf(instr, e));
  std::vector<Literal> parts;
  KILN_RETURN_IF_ERROR(Meet(instr, e, g, ops, [&](std::span<const Operands* const> all) -> Status {
    for (const Literal* l : *all[0]) parts.push_back(*l);
    return OkStatus();
  }));
  return ResultOf(std::move(parts));
}

// `want`: the result shape (an array, or a tuple of one per data operand).
StatusOr<Literal> CollectivePermute(const HloInstruction& instr, Operands ops, const Shape& want,
                                    Evaluator& e) {
  // Data operands: one per result element (the in-place form with output buffers and slice
  // offsets is not supported).
  const size_t data = want.IsTuple() ? static_cast<size_t>(want.tuple_shapes_size()) : 1;
  if (ops.size() != data)
    return UnsupportedInstruction(instr, "collective-permute with output buffers and slice offsets");
  KILN_RETURN_IF_ERROR(ExpectArrays(instr, ops));
  KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(instr, GridOf(e), DeviceOf(e)));
  const int64_t space = static_cast<int64_t>(dom.devices.size());
  const auto& pairs = instr.attrs().source_target_pairs;
  std::optional<int64_t> source;
  if (e.options().rendezvous) {
    KILN_ASSIGN_OR_RETURN(PeerPairs peers, PeersOf(instr, pairs, dom.my_id, space));
    source = peers.source;
  } else {
    // Alone: pairs among other participants' ids do not concern this one.
    for (const auto& [s, t] : pairs) {
      if (t != dom.my_id) continue;
      if (source)
        return InvalidArgument("collective-permute %", instr.name(), ": two pairs target ", t);
      source = s;
    }
    if (source && *source != dom.my_id)
      return UnsupportedInstruction(instr, "collective-permute from another participant (this "
                                           "evaluator runs alone; run the module over several: "
                                           "kiln run --replicas N --partitions M)");
  }
  Group g{dom.devices, dom.my_id};
  std::vector<Literal> parts;
  KILN_RETURN_IF_ERROR(Meet(instr, e, g, ops, [&](std::span<const Operands* const> all) -> Status {
    for (size_t k = 0; k < data; ++k) {
      if (source)
        parts.push_back(*(*all[*source])[k]);
      else
        parts.emplace_back(ops[k]->shape());
    }
    return OkStatus();
  }));
  return ResultOf(std::move(parts));
}

// The synchronous result of collective `op` (a start form's opcode mapped to its sync op).
StatusOr<Literal> RunCollective(const HloInstruction& instr, HloOpcode op, Operands ops,
                                const Shape& want, Evaluator& e) {
  StatusOr<Literal> r = [&]() -> StatusOr<Literal> {
    switch (op) {
      case HloOpcode::kAllReduce:
        return AllReduce(instr, ops, e);
      case HloOpcode::kAllGather:
        return AllGather(instr, ops, e);
      case HloOpcode::kReduceScatter:
        return ReduceScatter(instr, ops, e);
      case HloOpcode::kAllToAll:
        return AllToAll(instr, ops, e);
      case HloOpcode::kRaggedAllToAll:
        return RaggedAllToAll(instr, ops, e);
      case HloOpcode::kCollectiveBroadcast:
        return CollectiveBroadcast(instr, ops, e);
      case HloOpcode::kCollectivePermute:
        return CollectivePermute(instr, ops, want, e);
      default:
        return UnsupportedInstruction(instr);
    }
  }();
  if (!r.ok()) return r;
  if (!Shape::Compatible(r->shape(), want))
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": result ",
                           r->shape().ToString(false), " does not match the declared ",
                           want.ToString(false));
  return r;
}

StatusOr<Literal> EvalCollective(const HloInstruction& instr, Operands ops, Evaluator& e) {
  if (ops.empty())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " has no operands");
  return RunCollective(instr, instr.opcode(), ops, instr.shape(), e);
}

StatusOr<Literal> EvalCollectiveStart(const HloInstruction& instr, Operands ops, Evaluator& e) {
  if (ops.empty())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " has no operands");
  const Shape& s = instr.shape();
  const HloOpcode op = CollectiveSyncOpcode(instr.opcode());
  // The start's own shape is the result (all-reduce-start).
  Literal operands = OperandsValue(ops);
  if (op == HloOpcode::kAllReduce || !s.IsTuple() || s.tuple_shapes_size() < 2)
    return RunCollective(instr, op, ops, s, e);
  KILN_ASSIGN_OR_RETURN(Literal result, RunCollective(instr, op, ops, s.tuple_shapes(1), e));
  std::vector<Literal> parts;
  if (Shape::Compatible(operands.shape(), s.tuple_shapes(0))) {
    parts.push_back(std::move(operands));
  } else {
    parts.emplace_back(s.tuple_shapes(0));
  }
  parts.push_back(std::move(result));
  for (int64_t i = 2; i < s.tuple_shapes_size(); ++i) parts.emplace_back(s.tuple_shapes(i));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalCollectiveDone(const HloInstruction& instr, Operands ops, Evaluator&) {
  if (ops.size() != 1)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                           " takes one operand");
  const Literal& start = *ops[0];
  if (Shape::Compatible(start.shape(), instr.shape())) return start;
  if (start.shape().IsTuple() && start.tuple_size() >= 2 &&
      Shape::Compatible(start.tuple_element(1).shape(), instr.shape()))
    return start.tuple_element(1);
  return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ",
                         start.shape().ToString(false), " does not hold a ",
                         instr.shape().ToString(false));
}

// ---- send / recv ----

std::string MessageKey(const HloInstruction& instr, int64_t from, int64_t to, int64_t occurrence) {
  return StrCat("send/recv channel ", instr.attrs().channel_id.value_or(0), " from ", from, " to ",
                to, " #", occurrence);
}

Status ExpectDeviceTransfer(const HloInstruction& instr) {
  if (instr.attrs().is_host_transfer)
    return UnsupportedInstruction(instr, "a host transfer (is_host_transfer=true)");
  return OkStatus();
}

StatusOr<Literal> EvalSend(const HloInstruction& instr, Operands ops, Evaluator& e) {
  KILN_RETURN_IF_ERROR(ExpectDeviceTransfer(instr));
  if (ops.size() != 2) return InvalidArgument("send %", instr.name(), " takes (data, token)");
  KILN_ASSIGN_OR_RETURN(auto pairs, SendRecvPairsOf(instr));
  KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(instr, GridOf(e), DeviceOf(e)));
  KILN_ASSIGN_OR_RETURN(PeerPairs peers, PeersOf(instr, pairs, dom.my_id, static_cast<int64_t>(dom.devices.size())));
  const int64_t occurrence = e.NextOccurrence(instr);
  for (int64_t t : peers.targets)
    KILN_RETURN_IF_ERROR(e.rendezvous().Post(
        MessageKey(instr, dom.devices[dom.my_id], dom.devices[t], occurrence),
        std::make_shared<const Literal>(*ops[0])));
  std::vector<Literal> parts;
  parts.push_back(*ops[0]);
  parts.emplace_back(Shape::Scalar(PrimitiveType::kU32));
  parts.push_back(Literal::Token());
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalSendDone(const HloInstruction&, Operands, Evaluator&) {
  return Literal::Token();
}

StatusOr<Literal> EvalRecv(const HloInstruction& instr, Operands, Evaluator&) {
  KILN_RETURN_IF_ERROR(ExpectDeviceTransfer(instr));
  return Literal(instr.shape());  // the data arrives at recv-done
}

StatusOr<Literal> EvalRecvDone(const HloInstruction& instr, Operands, Evaluator& e) {
  KILN_RETURN_IF_ERROR(ExpectDeviceTransfer(instr));
  const Shape& s = instr.shape();
  if (!s.IsTuple() || s.tuple_shapes_size() != 2)
    return InvalidArgument("recv-done %", instr.name(), " must be (data, token)");
  KILN_ASSIGN_OR_RETURN(auto pairs, SendRecvPairsOf(instr));
  KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(instr, GridOf(e), DeviceOf(e)));
  KILN_ASSIGN_OR_RETURN(PeerPairs peers, PeersOf(instr, pairs, dom.my_id, static_cast<int64_t>(dom.devices.size())));
  const int64_t occurrence = e.NextOccurrence(instr);
  const std::optional<int64_t> source = peers.source;
  std::vector<Literal> parts;
  if (!source) {
    parts.emplace_back(s.tuple_shapes(0));
  } else {
    const int64_t from = dom.devices[*source];
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const void> v,
                          e.rendezvous().Take(MessageKey(instr, from, DeviceOf(e), occurrence), from));
    const Literal& got = *static_cast<const Literal*>(v.get());
    if (!Shape::Compatible(got.shape(), s.tuple_shapes(0)))
      return InvalidArgument("recv-done %", instr.name(), ": received ",
                             got.shape().ToString(false), ", expected ",
                             s.tuple_shapes(0).ToString(false));
    parts.push_back(got);
  }
  parts.push_back(Literal::Token());
  return Literal::MakeTuple(std::move(parts));
}

// ---- async wrappers and copies ----

StatusOr<Literal> EvalAsyncStart(const HloInstruction& instr, Operands ops, Evaluator& e) {
  if (instr.called_computations().empty())
    return InvalidArgument("async-start %", instr.name(), " wraps no computation");
  KILN_ASSIGN_OR_RETURN(Literal result, e.Evaluate(*instr.called_computations()[0], ops));
  const Shape& s = instr.shape();
  if (!s.IsTuple() || s.tuple_shapes_size() < 2)
    return InvalidArgument("async-start %", instr.name(), " must have a tuple shape");
  std::vector<Literal> parts;
  std::vector<Literal> operands;
  for (const Literal* l : ops) operands.push_back(*l);
  parts.push_back(Literal::MakeTuple(std::move(operands)));
  parts.push_back(std::move(result));
  for (int64_t i = 2; i < s.tuple_shapes_size(); ++i) parts.emplace_back(s.tuple_shapes(i));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalAsyncUpdate(const HloInstruction& instr, Operands ops, Evaluator&) {
  if (ops.size() != 1) return InvalidArgument("async-update %", instr.name(), " takes one operand");
  return *ops[0];
}

StatusOr<Literal> EvalAsyncDone(const HloInstruction& instr, Operands ops, Evaluator&) {
  if (ops.size() != 1 || !ops[0]->shape().IsTuple() || ops[0]->tuple_size() < 2)
    return InvalidArgument("async-done %", instr.name(), " takes an async-start's value");
  return ops[0]->tuple_element(1);
}

StatusOr<Literal> EvalCopyStart(const HloInstruction& instr, Operands ops, Evaluator&) {
  if (ops.size() != 1) return InvalidArgument("copy-start %", instr.name(), " takes one operand");
  const Shape& s = instr.shape();
  if (!s.IsTuple() || s.tuple_shapes_size() < 2)
    return InvalidArgument("copy-start %", instr.name(), " must have a tuple shape");
  std::vector<Literal> parts;
  parts.push_back(*ops[0]);
  parts.push_back(*ops[0]);
  for (int64_t i = 2; i < s.tuple_shapes_size(); ++i) parts.emplace_back(s.tuple_shapes(i));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalCopyDone(const HloInstruction& instr, Operands ops, Evaluator&) {
  if (ops.size() != 1 || !ops[0]->shape().IsTuple() || ops[0]->tuple_size() < 1)
    return InvalidArgument("copy-done %", instr.name(), " takes a copy-start's value");
  return ops[0]->tuple_element(0);
}

}  // namespace

namespace eval_internal {
void RegisterCollectiveKernels(KernelRegistry& r) {
  for (HloOpcode op :
       {HloOpcode::kAllReduce, HloOpcode::kAllGather, HloOpcode::kReduceScatter,
        HloOpcode::kAllToAll, HloOpcode::kRaggedAllToAll, HloOpcode::kCollectivePermute,
        HloOpcode::kCollectiveBroadcast})
    r.Register(op, EvalCollective);
  for (HloOpcode op :
       {HloOpcode::kAllReduceStart, HloOpcode::kAllGatherStart, HloOpcode::kCollectivePermuteStart})
    r.Register(op, EvalCollectiveStart);
  for (HloOpcode op :
       {HloOpcode::kAllReduceDone, HloOpcode::kAllGatherDone, HloOpcode::kCollectivePermuteDone})
    r.Register(op, EvalCollectiveDone);
  r.Register(HloOpcode::kSend, EvalSend);
  r.Register(HloOpcode::kSendDone, EvalSendDone);
  r.Register(HloOpcode::kRecv, EvalRecv);
  r.Register(HloOpcode::kRecvDone, EvalRecvDone);
  r.Register(HloOpcode::kAsyncStart, EvalAsyncStart);
  r.Register(HloOpcode::kAsyncUpdate, EvalAsyncUpdate);
  r.Register(HloOpcode::kAsyncDone, EvalAsyncDone);
  r.Register(HloOpcode::kCopyStart, EvalCopyStart);
  r.Register(HloOpcode::kCopyDone, EvalCopyDone);
}
}  // namespace eval_internal

}  // namespace kiln
