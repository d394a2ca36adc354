// Collective ops: the facts about one collective instruction that every implementation needs
// alike -- the evaluator (eval/collectives.cc), the cpu kernels (cpu/kernels/collectives.cc)
// and the cuda thunks (cuda/compiler/collective_thunks.cc) -- so that they read an
// instruction the same way: which synchronous op a -start or async-start runs, the dimension
// it chunks, who sends to whom, and how an array splits into rank-major chunks.
// docs/collectives.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"

namespace kiln {

// The synchronous opcode of a -start form (all-reduce-start -> all-reduce, all-gather-start
// -> all-gather, collective-permute-start -> collective-permute); any other opcode as it is.
HloOpcode CollectiveSyncOpcode(HloOpcode op);

// The collective an async-start wraps (its computation's root); `instr` itself otherwise.
const HloInstruction& UnwrapAsyncCollective(const HloInstruction& instr);

// Whether a collective-permute (or its -start, or an async-start wrapping one) is XLA's in-place
// form, with output buffers and slice offsets among its operands (more operands than results),
// which kiln refuses.
bool IsInPlaceCollectivePermute(const HloInstruction& instr);

// The dimension an all-gather / reduce-scatter / array all-to-all chunks (dimensions={d}); 0
// when the op has none.
int64_t CollectiveDimension(const HloInstruction& instr);

// The source-target pairs of a send, recv, send-done or recv-done: the frontend attribute
// _xla_send_recv_source_target_pairs of the op, else of its operand (the recv of a recv-done,
// the send of a send-done). InvalidArgument when neither has it.
StatusOr<std::vector<std::pair<int64_t, int64_t>>> SendRecvPairsOf(const HloInstruction& instr);

// One participant's view of a list of source-target pairs in an id space of `space` ids:
// where its data comes from (nullopt: nobody targets it) and where it goes (pair order).
struct PeerPairs {
  std::optional<int64_t> source;
  std::vector<int64_t> targets;
};
// InvalidArgument (naming `instr`) for a pair outside [0, space) or two pairs targeting `me`.
StatusOr<PeerPairs> PeersOf(const HloInstruction& instr, std::span<const std::pair<int64_t, int64_t>> pairs,
                            int64_t me, int64_t space);

// A row-major array seen along dimension d: `outer` slabs (the product of dims[0..d)) of
// `inner_bytes` each (dims[d..] times the element width).
struct Slabs {
  int64_t outer = 1;
  int64_t inner_bytes = 0;
};
Slabs SlabsOf(const Shape& shape, int64_t d);

// Host rearrangements between an array split into n pieces along its dimension d
// ([outer][n][piece]: `piece` = inner_bytes / n) and n rank-major chunks ([n][outer][piece]),
// which is how communicators see chunked data (eval/communicator.h).
void ToRankMajorChunks(const uint8_t* src, int64_t outer, int64_t n, int64_t piece, uint8_t* dst);
void FromRankMajorChunks(const uint8_t* src, int64_t outer, int64_t n, int64_t piece, uint8_t* dst);

}  // namespace kiln
