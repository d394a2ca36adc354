#include "kiln/eval/communicator.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/float_types.h"

namespace kiln {

std::string_view ReductionKindString(ReductionKind k) {
  switch (k) {
    case ReductionKind::kSum:
      return "sum";
    case ReductionKind::kProduct:
      return "product";
    case ReductionKind::kMin:
      return "min";
    case ReductionKind::kMax:
      return "max";
  }
  return "?";
}

std::optional<ReductionKind> MatchReduction(const HloComputation& c) {
  const HloInstruction* root = c.root_instruction();
  if (root == nullptr || c.num_parameters() != 2 || root->operand_count() != 2) return std::nullopt;
  if (!root->shape().IsArray() || root->shape().rank() != 0) return std::nullopt;
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter || a == b)
    return std::nullopt;
  const bool pred = root->shape().element_type() == PrimitiveType::kPred;
  switch (root->opcode()) {
    case HloOpcode::kAdd:
      return ReductionKind::kSum;
    case HloOpcode::kMultiply:
      return ReductionKind::kProduct;
    case HloOpcode::kMinimum:
      return ReductionKind::kMin;
    case HloOpcode::kMaximum:
      return ReductionKind::kMax;
    case HloOpcode::kAnd:
      if (pred) return ReductionKind::kMin;
      return std::nullopt;
    case HloOpcode::kOr:
      if (pred) return ReductionKind::kMax;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

namespace {

// One step of `op` on native values, as the evaluator computes it (narrow floats in f32,
// rounded once; integers wrap; NaN propagates through min/max).
template <typename T>
T Combine(ReductionKind op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return (op == ReductionKind::kSum || op == ReductionKind::kMax) ? (a || b) : (a && b);
  } else if constexpr (kIsMiniFloat<T>) {
    const float x = static_cast<float>(a.ToDouble()), y = static_cast<float>(b.ToDouble());
    return T(static_cast<double>(Combine<float>(op, x, y)));
  } else if constexpr (kIsIntN<T>) {
    const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    return T(Combine<int64_t>(op, x, y));
  } else if constexpr (kIsComplexNative<T>) {
    return op == ReductionKind::kProduct ? a * b : a + b;  // min/max refused before
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReductionKind::kSum:
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case ReductionKind::kProduct:
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case ReductionKind::kMin:
        return std::min(a, b);
      case ReductionKind::kMax:
        return std::max(a, b);
    }
    return a;
  } else {
    switch (op) {
      case ReductionKind::kSum:
        return a + b;
      case ReductionKind::kProduct:
        return a * b;
      case ReductionKind::kMin:
        return (a != a || b != b) ? (a != a ? a : b) : std::min(a, b);
      case ReductionKind::kMax:
        return (a != a || b != b) ? (a != a ? a : b) : std::max(a, b);
    }
    return a;
  }
}

// out[i] = reduce over ranks of ptrs[r][offset + i], i < count.
Status ReduceInto(PrimitiveType type, ReductionKind op, std::span<const void* const> ptrs,
                  int64_t offset, int64_t count, void* out) {
  if (IsComplexType(type) && (op == ReductionKind::kMin || op == ReductionKind::kMax))
    return InvalidArgument("a ", ReductionKindString(op), " reduction of ", PrimitiveTypeName(type),
                           " values");
  ArrayTypeSwitch(type, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    T* dst = static_cast<T*>(out);
    const T* first = static_cast<const T*>(ptrs[0]) + offset;
    std::copy(first, first + count, dst);
    for (size_t r = 1; r < ptrs.size(); ++r) {
      const T* src = static_cast<const T*>(ptrs[r]) + offset;
      for (int64_t i = 0; i < count; ++i) dst[i] = Combine<T>(op, dst[i], src[i]);
    }
  });
  return OkStatus();
}

}  // namespace

// Every call computes its result into `scratch` while the members' send buffers are held, and
// copies it into `recv` after the meeting: `recv` may be the caller's own send buffer, which
// the others read during the meeting.
Status InProcessCommunicator::AllReduce(const CollectiveCall& call, PrimitiveType type,
                                        ReductionKind op, const void* send, void* recv,
                                        int64_t count) {
  std::vector<uint8_t> scratch(count * PrimitiveByteWidth(type));
  KILN_RETURN_IF_ERROR(rendezvous_->Exchange(
      call.key, call.group, call.rank, send, [&](std::span<const void* const> ptrs) {
        return ReduceInto(type, op, ptrs, 0, count, scratch.data());
      }));
  std::memcpy(recv, scratch.data(), scratch.size());
  return OkStatus();
}

Status InProcessCommunicator::AllGather(const CollectiveCall& call, const void* send, void* recv,
                                        int64_t bytes) {
  std::vector<uint8_t> scratch(bytes * call.group.size());
  KILN_RETURN_IF_ERROR(rendezvous_->Exchange(
      call.key, call.group, call.rank, send, [&](std::span<const void* const> ptrs) {
        for (size_t r = 0; r < ptrs.size(); ++r) std::memcpy(scratch.data() + r * bytes, ptrs[r], bytes);
        return OkStatus();
      }));
  std::memcpy(recv, scratch.data(), scratch.size());
  return OkStatus();
}

Status InProcessCommunicator::ReduceScatter(const CollectiveCall& call, PrimitiveType type,
                                            ReductionKind op, const void* send, void* recv,
                                            int64_t count) {
  std::vector<uint8_t> scratch(count * PrimitiveByteWidth(type));
  KILN_RETURN_IF_ERROR(rendezvous_->Exchange(
      call.key, call.group, call.rank, send, [&](std::span<const void* const> ptrs) {
        return ReduceInto(type, op, ptrs, call.rank * count, count, scratch.data());
      }));
  std::memcpy(recv, scratch.data(), scratch.size());
  return OkStatus();
}

Status InProcessCommunicator::AllToAll(const CollectiveCall& call, const void* send, void* recv,
                                       int64_t bytes) {
  std::vector<uint8_t> scratch(bytes * call.group.size());
  KILN_RETURN_IF_ERROR(rendezvous_->Exchange(
      call.key, call.group, call.rank, send, [&](std::span<const void* const> ptrs) {
        for (size_t r = 0; r < ptrs.size(); ++r)
          std::memcpy(scratch.data() + r * bytes,
                      static_cast<const uint8_t*>(ptrs[r]) + call.rank * bytes, bytes);
        return OkStatus();
      }));
  std::memcpy(recv, scratch.data(), scratch.size());
  return OkStatus();
}

Status InProcessCommunicator::Permute(const CollectiveCall& call, const void* send, void* recv,
                                      int64_t bytes, std::optional<int64_t> source) {
  if (source && (*source < 0 || *source >= static_cast<int64_t>(call.group.size())))
    return InvalidArgument(call.key, ": source ", *source, " outside a group of ", call.group.size());
  std::vector<uint8_t> scratch(bytes, 0);
  KILN_RETURN_IF_ERROR(rendezvous_->Exchange(
      call.key, call.group, call.rank, send, [&](std::span<const void* const> ptrs) {
        if (source) std::memcpy(scratch.data(), ptrs[*source], bytes);
        return OkStatus();
      }));
  std::memcpy(recv, scratch.data(), scratch.size());
  return OkStatus();
}

Status InProcessCommunicator::Broadcast(const CollectiveCall& call, const void* send, void* recv,
                                        int64_t bytes, int64_t root) {
  return Permute(call, send, recv, bytes, root);
}

Status InProcessCommunicator::AllToAllV(const CollectiveCall& call, const void* send,
                                        std::span<const BufferPiece> send_pieces, void* recv,
                                        std::span<const BufferPiece> recv_pieces) {
  struct Offer {
    const uint8_t* data;
    std::span<const BufferPiece> pieces;
  };
  const int64_t n = static_cast<int64_t>(call.group.size());
  if (n == 0 || send_pieces.size() % n != 0 || recv_pieces.size() != send_pieces.size())
    return InvalidArgument(call.key, ": ", send_pieces.size(), " send and ", recv_pieces.size(),
                           " receive pieces for a group of ", n);
  const int64_t k = static_cast<int64_t>(send_pieces.size()) / n;
  const Offer mine{static_cast<const uint8_t*>(send), send_pieces};
  // Members read only the others' send buffers, so each writes its own recv in the meeting.
  return rendezvous_->Exchange(call.key, call.group, call.rank, &mine, [&](std::span<const void* const> ptrs) -> Status {
    for (int64_t j = 0; j < n; ++j) {
      const Offer& from = *static_cast<const Offer*>(ptrs[j]);
      if (static_cast<int64_t>(from.pieces.size()) != n * k)
        return InvalidArgument(call.key, ": member ", j, " sends ", from.pieces.size(), " pieces, expected ", n * k);
      for (int64_t u = 0; u < k; ++u) {
        const BufferPiece& in = from.pieces[call.rank * k + u];
        const BufferPiece& out = recv_pieces[j * k + u];
        if (in.bytes != out.bytes)
          return InvalidArgument(call.key, ": member ", j, " sends ", in.bytes, " bytes as piece ", u, ", ", out.bytes,
                                 " expected");
        if (in.bytes > 0) std::memcpy(static_cast<uint8_t*>(recv) + out.offset, from.data + in.offset, in.bytes);
      }
    }
    return OkStatus();
  });
}

}  // namespace kiln
