// Communicator: the collectives of one participant over raw buffers, the interface a backend's
// collective thunks call (the CPU backend's now; an NCCL-backed one for cuda later implements
// the same calls with device pointers: each maps to one NCCL call or one grouped send/recv).
//
// A call names its meeting (CollectiveCall: a key that is the same on every member, the group
// as global device ids in rank order, the caller's rank; eval/collective_groups.h) and its
// buffers. Buffers are dense; chunked ops (all-gather, reduce-scatter, all-to-all) see their
// data as `n` contiguous chunks in rank order -- a collective along another dimension is
// rearranged by the caller. `recv` may alias `send` (in-place all-reduce).
//
// InProcessCommunicator: the participants are threads of one process with host memory; every
// call is one Rendezvous exchange of the send pointers (eval/rendezvous.h: timeouts, aborts).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "kiln/base/status.h"
#include "kiln/eval/rendezvous.h"
#include "kiln/hlo/types.h"

namespace kiln {

class HloComputation;

// The reductions a communicator computes natively (NCCL's ncclSum/ncclProd/ncclMin/ncclMax).
enum class ReductionKind : uint8_t { kSum, kProduct, kMin, kMax };
std::string_view ReductionKindString(ReductionKind k);  // "sum", ...

// The reduction `computation` is when it is exactly one add / multiply / minimum / maximum (or
// and / or on pred) of its two scalar parameters; nullopt for any other computation (the caller
// then reduces another way).
std::optional<ReductionKind> MatchReduction(const HloComputation& computation);

// A piece of a buffer: `bytes` bytes from byte `offset`.
struct BufferPiece {
  int64_t offset = 0;
  int64_t bytes = 0;
};

struct CollectiveCall {
  std::string key;               // the op instance; the same on every member
  std::span<const int64_t> group;  // global device ids, rank order
  int64_t rank = 0;              // the caller's index in `group`
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  // recv[i] = send_0[i] op send_1[i] op ... (rank order), `count` elements of `type`.
  virtual Status AllReduce(const CollectiveCall& call, PrimitiveType type, ReductionKind op,
                           const void* send, void* recv, int64_t count) = 0;
  // recv = send_0 ++ send_1 ++ ... (`bytes` each).
  virtual Status AllGather(const CollectiveCall& call, const void* send, void* recv,
                           int64_t bytes) = 0;
  // recv = chunk `rank` of the all-reduce of `send` (n chunks of `count` elements).
  virtual Status ReduceScatter(const CollectiveCall& call, PrimitiveType type, ReductionKind op,
                               const void* send, void* recv, int64_t count) = 0;
  // Chunk j of recv = chunk `rank` of member j's send (n chunks of `bytes`).
  virtual Status AllToAll(const CollectiveCall& call, const void* send, void* recv,
                          int64_t bytes) = 0;
  // recv = the send of member `source` (zeros without a source); `bytes` each. Every member of
  // the group calls, whether or not it sends or receives.
  virtual Status Permute(const CollectiveCall& call, const void* send, void* recv, int64_t bytes,
                         std::optional<int64_t> source) = 0;
  // recv = member `root`'s send (`bytes`).
  virtual Status Broadcast(const CollectiveCall& call, const void* send, void* recv, int64_t bytes,
                           int64_t root) = 0;
  // Pieces of different sizes to every member (ragged-all-to-all): with k = pieces per member
  // (send_pieces.size() / n), send_pieces[j * k + u] of `send` goes to member j as its piece u,
  // and member j's piece u lands at recv_pieces[j * k + u] of `recv`, member by member in rank
  // order; each side says the same size for a piece (the caller exchanged the sizes first;
  // InvalidArgument otherwise). `recv` must not be any member's `send`.
  virtual Status AllToAllV(const CollectiveCall& call, const void* send,
                           std::span<const BufferPiece> send_pieces, void* recv,
                           std::span<const BufferPiece> recv_pieces) = 0;
};

class InProcessCommunicator final : public Communicator {
 public:
  explicit InProcessCommunicator(std::shared_ptr<Rendezvous> rendezvous)
      : rendezvous_(std::move(rendezvous)) {}
  Rendezvous& rendezvous() { return *rendezvous_; }

  Status AllReduce(const CollectiveCall& call, PrimitiveType type, ReductionKind op,
                   const void* send, void* recv, int64_t count) override;
  Status AllGather(const CollectiveCall& call, const void* send, void* recv, int64_t bytes) override;
  Status ReduceScatter(const CollectiveCall& call, PrimitiveType type, ReductionKind op,
                       const void* send, void* recv, int64_t count) override;
  Status AllToAll(const CollectiveCall& call, const void* send, void* recv, int64_t bytes) override;
  Status Permute(const CollectiveCall& call, const void* send, void* recv, int64_t bytes,
                 std::optional<int64_t> source) override;
  Status Broadcast(const CollectiveCall& call, const void* send, void* recv, int64_t bytes,
                   int64_t root) override;
  Status AllToAllV(const CollectiveCall& call, const void* send, std::span<const BufferPiece> send_pieces,
                   void* recv, std::span<const BufferPiece> recv_pieces) override;

 private:
  std::shared_ptr<Rendezvous> rendezvous_;
};

}  // namespace kiln
