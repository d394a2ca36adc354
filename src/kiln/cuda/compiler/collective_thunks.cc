#include "kiln/cuda/compiler/collective_thunks.h"

#include <cuda.h>

#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/collective_kernels.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/driver_api.h"
#include "kiln/eval/collective_ops.h"
#include "kiln/hlo/computation.h"

namespace kiln::cuda {

namespace {

using nccl::ncclComm_t;

HloOpcode SyncOf(HloOpcode op) { return CollectiveSyncOpcode(op); }
const HloInstruction& OpInstruction(const HloInstruction& instr) { return UnwrapAsyncCollective(instr); }

CUstream Handle(runtime::Stream& s) { return static_cast<CudaStream&>(s).handle(); }
void* Ptr(const ThunkExecuteParams& p, const BufferSlice& s) { return p.buffers->Get(s).ptr; }
runtime::DeviceMemory Mem(const ThunkExecuteParams& p, const BufferSlice& s) { return p.buffers->Get(s); }

// Product of dims[0..d) and bytes of dims[d..] (eval/collective_ops.h's slabs).
std::pair<int64_t, int64_t> OuterAndInnerBytes(const Shape& s, int64_t d) {
  const Slabs slabs = SlabsOf(s, d);
  return {slabs.outer, slabs.inner_bytes};
}

int64_t Dimension(const HloInstruction& op) { return CollectiveDimension(op); }

uint64_t Align256(uint64_t b) { return (b + 255) / 256 * 256; }

StatusOr<std::vector<std::pair<int64_t, int64_t>>> PairsOf(const HloInstruction& instr) { return SendRecvPairsOf(instr); }

// NCCL's reduction for `kind` on `type` (pred: add = or = max, multiply = and = min).
nccl::ncclRedOp_t RedOp(ReductionKind kind, PrimitiveType type) {
  if (type == PrimitiveType::kPred) {
    if (kind == ReductionKind::kSum) return nccl::ncclMax;
    if (kind == ReductionKind::kProduct) return nccl::ncclMin;
  }
  switch (kind) {
    case ReductionKind::kSum: return nccl::ncclSum;
    case ReductionKind::kProduct: return nccl::ncclProd;
    case ReductionKind::kMin: return nccl::ncclMin;
    case ReductionKind::kMax: return nccl::ncclMax;
  }
  return nccl::ncclSum;
}

// Element type and count NCCL reduces `elements` of `type` as (complex sums as pairs of reals).
StatusOr<std::pair<nccl::ncclDataType_t, size_t>> ReduceAs(PrimitiveType type, int64_t elements) {
  if (type == PrimitiveType::kC64) return std::make_pair(nccl::ncclFloat32, static_cast<size_t>(2 * elements));
  if (type == PrimitiveType::kC128) return std::make_pair(nccl::ncclFloat64, static_cast<size_t>(2 * elements));
  std::optional<nccl::ncclDataType_t> t = NcclReductionType(type);
  if (!t) return Unimplemented("NCCL reduces no ", PrimitiveTypeName(type));
  return std::make_pair(*t, static_cast<size_t>(elements));
}

// 2-D strided copies on the driver (cuMemcpy2DAsync), for chunking a non-major dimension.
using Memcpy2DFn = CUresult (*)(const CUDA_MEMCPY2D*, CUstream);

Status Copy2D(const DriverApi& api, Memcpy2DFn fn, CUstream s, void* dst, int64_t dst_pitch, const void* src,
              int64_t src_pitch, int64_t width, int64_t height) {
  if (fn == nullptr) return Unimplemented("cuda: the driver has no cuMemcpy2DAsync");
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  c.srcPitch = static_cast<size_t>(src_pitch);
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  c.dstPitch = static_cast<size_t>(dst_pitch);
  c.WidthInBytes = static_cast<size_t>(width);
  c.Height = static_cast<size_t>(height);
  return CuStatus(api, fn(&c, s), "cuMemcpy2DAsync");
}

struct Copier {
  const DriverApi* api = nullptr;
  Memcpy2DFn fn = nullptr;
  // [outer][n][piece] -> [n][outer][piece]
  Status ToChunks(CUstream s, const void* src, int64_t outer, int64_t n, int64_t piece, void* dst) const {
    for (int64_t j = 0; j < n; ++j)
      KILN_RETURN_IF_ERROR(Copy2D(*api, fn, s, static_cast<char*>(dst) + j * outer * piece, piece,
                                  static_cast<const char*>(src) + j * piece, n * piece, piece, outer));
    return OkStatus();
  }
  // [n][outer][piece] -> [outer][n][piece]
  Status FromChunks(CUstream s, const void* src, int64_t outer, int64_t n, int64_t piece, void* dst) const {
    for (int64_t j = 0; j < n; ++j)
      KILN_RETURN_IF_ERROR(Copy2D(*api, fn, s, static_cast<char*>(dst) + j * piece, n * piece,
                                  static_cast<const char*>(src) + j * outer * piece, piece, piece, outer));
    return OkStatus();
  }
};

// One NCCL group around `body` (several calls issued together).
template <typename Body>
Status Grouped(const NcclWorld& w, Body body) {
  KILN_RETURN_IF_ERROR(w.Result(w.api().ncclGroupStart(), "ncclGroupStart"));
  Status s = body();
  Status end = w.Result(w.api().ncclGroupEnd(), "ncclGroupEnd");
  return s.ok() ? end : s;
}

// The channel of a send / recv(-done): its own channel_id, else its operand's.
int64_t ChannelOf(const HloInstruction& instr) {
  if (instr.attrs().channel_id) return *instr.attrs().channel_id;
  if (instr.operand_count() > 0 && instr.operand(0)->attrs().channel_id) return *instr.operand(0)->attrs().channel_id;
  return 0;
}

std::string Where(const HloInstruction& instr) { return StrCat(HloOpcodeString(instr.opcode()), " %", instr.name()); }

// Everything a thunk needs from the driver, per device.
struct DriverBits {
  const DriverApi* api = nullptr;
  Memcpy2DFn memcpy2d = nullptr;
};

}  // namespace

CollectiveThunk::CollectiveThunk(const HloInstruction& instr, const HloInstruction& op_instr, HloOpcode op)
    : GpuThunk(Kind::kCollective, instr.name()), instr_(instr), op_instr_(op_instr), op_(op) {}

StatusOr<std::unique_ptr<CollectiveThunk>> CollectiveThunk::Create(const HloInstruction& instr,
                                                                   std::vector<BufferSlice> operands,
                                                                   std::vector<BufferSlice> leaves,
                                                                   CollectiveThunkOptions options) {
  KILN_RETURN_IF_ERROR(CollectiveThunkApplies(instr));
  const HloInstruction& op_instr = OpInstruction(instr);
  const HloOpcode op = SyncOf(op_instr.opcode());
  std::unique_ptr<CollectiveThunk> t(new CollectiveThunk(instr, op_instr, op));
  for (const HloInstruction* o : op_instr.operands())
    if (o->shape().IsArray()) t->operand_shapes_.push_back(o->shape());
  if (operands.size() != t->operand_shapes_.size())
    return Internal(Where(instr), ": ", operands.size(), " operand slices for ", t->operand_shapes_.size(), " operands");
  t->operands_ = std::move(operands);
  const size_t n_ops = t->operands_.size();
  t->max_group_ = std::max<int64_t>(1, options.max_group);
  t->cubin_ = std::move(options.cubin);
  if (op == HloOpcode::kAllReduce || op == HloOpcode::kReduceScatter) {
    if (NcclReduces(op_instr)) {
      t->reduction_ = MatchReduction(*op_instr.called_computations()[0]);
    } else {
      t->device_reduction_ = true;
      if (t->cubin_.empty())
        return Internal(Where(instr), ": a reduction NCCL lacks needs its combine kernel (collective_kernels.h)");
    }
  }
  if (op == HloOpcode::kRaggedAllToAll && t->cubin_.empty())
    return Internal(Where(instr), ": ragged-all-to-all needs its copy kernel (collective_kernels.h)");
  const bool start = instr.opcode() != op_instr.opcode() || instr.opcode() == HloOpcode::kAllReduceStart ||
                     instr.opcode() == HloOpcode::kAllGatherStart || instr.opcode() == HloOpcode::kCollectivePermuteStart;
  if (op == HloOpcode::kSend) {
    // (data, context, token): the data is staged in the result (Note [Send and recv on NCCL]).
    if (leaves.size() < 1 || n_ops != 1) return Internal(Where(instr), ": expected (data, context, token)");
    t->staged_ = {leaves[0]};
    t->contexts_.assign(leaves.begin() + 1, leaves.end());
  } else if (op == HloOpcode::kRecv) {
    t->contexts_.assign(leaves.begin() + std::min<size_t>(1, leaves.size()), leaves.end());
  } else if (!start || instr.opcode() == HloOpcode::kAllReduceStart) {
    if (leaves.size() < n_ops && op != HloOpcode::kReplicaId && op != HloOpcode::kPartitionId &&
        op != HloOpcode::kRaggedAllToAll)
      return Internal(Where(instr), ": ", leaves.size(), " result leaves for ", n_ops, " operands");
    t->results_ = std::move(leaves);
    t->async_ = start;
    t->in_place_ = start;
  } else {
    // (operands, results, contexts...): the operands are copied into the start's own leaves.
    if (leaves.size() < 2 * n_ops) return Internal(Where(instr), ": unexpected result leaves");
    t->staged_.assign(leaves.begin(), leaves.begin() + static_cast<std::ptrdiff_t>(n_ops));
    t->results_.assign(leaves.begin() + static_cast<std::ptrdiff_t>(n_ops), leaves.begin() + static_cast<std::ptrdiff_t>(2 * n_ops));
    t->contexts_.assign(leaves.begin() + static_cast<std::ptrdiff_t>(2 * n_ops), leaves.end());
    t->async_ = true;
  }
  // Workspace for rearranging a non-major dimension and for gathering every member's data
  // (such a start then runs synchronously). All-gathers of several operands each have their
  // own place: their rearrangements run after the one NCCL group.
  const int64_t d = Dimension(op_instr);
  const uint64_t n_max = static_cast<uint64_t>(t->max_group_);
  uint64_t ws = 0, gathers = 0;
  for (size_t k = 0; k < n_ops; ++k) {
    const Shape& s = t->operand_shapes_[k];
    const uint64_t bytes = static_cast<uint64_t>(s.num_elements() * PrimitiveByteWidth(s.element_type()));
    const bool chunked = s.rank() > 0 && d < s.rank() && OuterAndInnerBytes(s, d).first != 1;
    if (t->device_reduction_) {
      // Note [Reductions NCCL lacks]: (the rank-major copy of a reduce-scatter's operand) and n copies.
      const uint64_t own = op == HloOpcode::kReduceScatter && chunked ? Align256(bytes) : 0;
      ws = std::max(ws, own + n_max * bytes);
      continue;
    }
    if (op == HloOpcode::kRaggedAllToAll) {
      // Note [Ragged all-to-all on NCCL]: every member's input and its three index operands.
      if (k == 0 || (k >= 2 && k <= 4)) ws += Align256(n_max * bytes);
      continue;
    }
    if (!chunked) continue;
    if (op == HloOpcode::kAllGather && k < t->results_.size()) gathers += Align256(t->results_[k].size);
    if (op == HloOpcode::kReduceScatter) ws = std::max(ws, bytes);
    if (op == HloOpcode::kAllToAll && !op_instr.attrs().dimensions.empty()) ws = std::max(ws, 2 * Align256(bytes));
  }
  t->workspace_ = std::max(ws, gathers);
  if (ws > 0) t->async_ = false;
  return t;
}

Status CollectiveThunk::Initialize(const ThunkInitParams& params) {
  if (params.device == nullptr) return OkStatus();
  if (!cubin_.empty() && !module_) {
    KILN_ASSIGN_OR_RETURN(module_, params.device->LoadModule(runtime::ModuleSpec::FromCubin(cubin_, StrCat(name(), ".collective"))));
    if (op_ == HloOpcode::kRaggedAllToAll) {
      KILN_ASSIGN_OR_RETURN(runtime::Kernel * k, module_->GetKernel(kRaggedEntry));
      kernels_.push_back(k);
    } else {
      for (size_t i = 0; i < operand_shapes_.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(runtime::Kernel * k, module_->GetKernel(CombineEntry(static_cast<int64_t>(i))));
        kernels_.push_back(k);
      }
    }
  }
  if (async_) {
    KILN_ASSIGN_OR_RETURN(ready_event_, params.device->CreateEvent({}));
    KILN_ASSIGN_OR_RETURN(done_event_, params.device->CreateEvent({}));
  }
  return OkStatus();
}

std::string CollectiveThunk::ToString() const {
  std::string s = StrCat("collective %", name(), " ", HloOpcodeString(op_));
  if (reduction_) s += StrCat(" ", ReductionKindString(*reduction_));
  if (device_reduction_) s += StrCat(" combine ", op_instr_.called_computations()[0]->name(), " on the device");
  if (async_) s += " async (collective stream)";
  if (workspace_ > 0) s += StrCat(" workspace ", workspace_);
  return s + " nccl";
}

Status CollectiveThunk::Execute(const ThunkExecuteParams& params) const {
  runtime::Stream& main = *params.stream;
  if (op_ == HloOpcode::kReplicaId || op_ == HloOpcode::kPartitionId) {
    if (results_.empty()) return Internal(Where(instr_), ": no result");
    const GpuParticipant* p = params.participant;
    const int64_t id = p == nullptr ? 0 : op_ == HloOpcode::kReplicaId ? p->replica_id() : p->partition_id();
    return main.Memset32(Mem(params, results_[0]), static_cast<uint32_t>(id));
  }
  // Operands into the buffers that live until the -done (or the send-done).
  for (size_t k = 0; k < staged_.size() && k < operands_.size(); ++k)
    if (operands_[k] != staged_[k]) KILN_RETURN_IF_ERROR(main.MemcpyDeviceToDevice(Mem(params, staged_[k]), Mem(params, operands_[k]), operands_[k].size));
  if (in_place_)
    for (size_t k = 0; k < operands_.size(); ++k)
      if (operands_[k] != results_[k]) KILN_RETURN_IF_ERROR(main.MemcpyDeviceToDevice(Mem(params, results_[k]), Mem(params, operands_[k]), operands_[k].size));
  for (const BufferSlice& c : contexts_)
    if (c.size > 0) KILN_RETURN_IF_ERROR(main.Memset8(Mem(params, c), 0));
  if (!async_ || params.collective_stream == nullptr || !done_event_) {
    KILN_RETURN_IF_ERROR(Run(params, main));
    if (done_event_) KILN_RETURN_IF_ERROR(main.RecordEvent(*done_event_));
    return OkStatus();
  }
  // Note [Collective streams]
  runtime::Stream& side = *params.collective_stream;
  KILN_RETURN_IF_ERROR(main.RecordEvent(*ready_event_));
  KILN_RETURN_IF_ERROR(side.WaitEvent(*ready_event_));
  KILN_RETURN_IF_ERROR(Run(params, side));
  return side.RecordEvent(*done_event_);
}

Status CollectiveThunk::Run(const ThunkExecuteParams& params, runtime::Stream& stream) const {
  GpuParticipant* p = params.participant;
  if (p == nullptr || p->world == nullptr) return RunAlone(params, stream);
  NcclWorld& w = *p->world;
  const NcclApi& api = w.api();
  const int64_t me = p->device;
  const CUstream s = Handle(stream);
  CudaDevice* dev = w.device(me);
  Copier copier;
  if (dev != nullptr) {
    copier.api = &dev->api();
    copier.fn = reinterpret_cast<Memcpy2DFn>(dev->api().library.Symbol("cuMemcpy2DAsync_v2"));
  }
  auto src = [&](size_t k) -> const BufferSlice& {
    return in_place_ ? results_[k] : !staged_.empty() ? staged_[k] : operands_[k];
  };
  const size_t n_ops = operands_.size();
  const int64_t d = Dimension(op_instr_);
  char* ws = static_cast<char*>(params.workspace.ptr);
  switch (op_) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllGather:
    case HloOpcode::kReduceScatter: {
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> group, CollectiveGroupOf(op_instr_, p->grid, me));
      const int64_t n = static_cast<int64_t>(group.size());
      const int64_t rank = std::find(group.begin(), group.end(), me) - group.begin();
      KILN_ASSIGN_OR_RETURN(ncclComm_t comm, w.Group(me, group));
      if (device_reduction_) {
        if (n > max_group_)
          return FailedPrecondition(Where(instr_), ": a group of ", n, " participants; compiled for groups of at most ",
                                    max_group_, " (the module header's replica_count x num_partitions at compile time)");
        for (size_t k = 0; k < n_ops; ++k) KILN_RETURN_IF_ERROR(GatherAndCombine(params, stream, w, comm, k, n, rank));
        return OkStatus();
      }
      // Calls that need a rearrangement around them are issued one by one; the rest grouped.
      // All-gathers rearranged after the group each have their own place in the workspace.
      std::vector<std::function<Status()>> after;
      uint64_t gathered = 0;
      Status st = Grouped(w, [&]() -> Status {
        for (size_t k = 0; k < n_ops; ++k) {
          const Shape& shape = operand_shapes_[k];
          void* in = Ptr(params, src(k));
          void* out = Ptr(params, results_[k]);
          const int64_t bytes = src(k).size;
          if (op_ == HloOpcode::kAllReduce) {
            KILN_ASSIGN_OR_RETURN(auto as, ReduceAs(shape.element_type(), shape.num_elements()));
            KILN_RETURN_IF_ERROR(w.Result(api.ncclAllReduce(in, out, as.second, as.first, RedOp(*reduction_, shape.element_type()), comm, s),
                                          "ncclAllReduce", comm));
          } else if (op_ == HloOpcode::kAllGather) {
            const auto [outer, piece] = shape.rank() > 0 ? OuterAndInnerBytes(shape, d) : std::make_pair<int64_t, int64_t>(1, 0);
            if (results_[k].size != bytes * n) return InvalidArgument(Where(instr_), ": a result of ", results_[k].size, " bytes for a group of ", n);
            if (outer == 1) {
              KILN_RETURN_IF_ERROR(w.Result(api.ncclAllGather(in, out, static_cast<size_t>(bytes), nccl::ncclInt8, comm, s), "ncclAllGather", comm));
            } else {
              char* place = ws + gathered;
              gathered += Align256(static_cast<uint64_t>(results_[k].size));
              KILN_RETURN_IF_ERROR(w.Result(api.ncclAllGather(in, place, static_cast<size_t>(bytes), nccl::ncclInt8, comm, s), "ncclAllGather", comm));
              after.push_back([&, outer = outer, piece = piece, out, place] { return copier.FromChunks(s, place, outer, n, piece, out); });
            }
          } else {
            if (shape.rank() == 0 || shape.dimensions(d) % n != 0)
              return InvalidArgument(Where(instr_), ": dimension ", d, " does not split into ", n, " chunks");
            const auto [outer, inner] = OuterAndInnerBytes(shape, d);
            KILN_ASSIGN_OR_RETURN(auto as, ReduceAs(shape.element_type(), shape.num_elements() / n));
            const void* from = in;
            if (outer != 1) {
              // The chunking copies must precede the call: leave the group for them.
              KILN_RETURN_IF_ERROR(w.Result(api.ncclGroupEnd(), "ncclGroupEnd"));
              Status c = copier.ToChunks(s, in, outer, n, inner / n, ws);
              KILN_RETURN_IF_ERROR(w.Result(api.ncclGroupStart(), "ncclGroupStart"));
              KILN_RETURN_IF_ERROR(c);
              from = ws;
            }
            KILN_RETURN_IF_ERROR(w.Result(api.ncclReduceScatter(from, out, as.second, as.first, RedOp(*reduction_, shape.element_type()), comm, s),
                                          "ncclReduceScatter", comm));
          }
        }
        return OkStatus();
      });
      KILN_RETURN_IF_ERROR(st);
      for (auto& f : after) KILN_RETURN_IF_ERROR(f());
      return OkStatus();
    }
    case HloOpcode::kRaggedAllToAll: {
      // Note [Ragged all-to-all on NCCL]
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> group, CollectiveGroupOf(op_instr_, p->grid, me));
      const int64_t n = static_cast<int64_t>(group.size());
      const int64_t rank = std::find(group.begin(), group.end(), me) - group.begin();
      if (n > max_group_)
        return FailedPrecondition(Where(instr_), ": a group of ", n, " participants; compiled for groups of at most ",
                                  max_group_, " (the module header's replica_count x num_partitions at compile time)");
      KILN_ASSIGN_OR_RETURN(ncclComm_t comm, w.Group(me, group));
      const void* gathered[5] = {};
      uint64_t offset = 0;
      KILN_RETURN_IF_ERROR(Grouped(w, [&]() -> Status {
        for (size_t k : {0, 2, 3, 4}) {
          const size_t bytes = static_cast<size_t>(operands_[k].size);
          char* place = ws + offset;
          gathered[k] = place;
          offset += Align256(static_cast<uint64_t>(n) * bytes);
          KILN_RETURN_IF_ERROR(w.Result(api.ncclAllGather(Ptr(params, operands_[k]), place, bytes, nccl::ncclInt8, comm, s),
                                        "ncclAllGather", comm));
        }
        return OkStatus();
      }));
      return RaggedCopy(params, stream, gathered, n, rank);
    }
    case HloOpcode::kAllToAll: {
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> group, CollectiveGroupOf(op_instr_, p->grid, me));
      const int64_t n = static_cast<int64_t>(group.size());
      KILN_ASSIGN_OR_RETURN(ncclComm_t comm, w.World(me));
      if (op_instr_.attrs().dimensions.empty()) {
        if (static_cast<int64_t>(n_ops) != n) return InvalidArgument(Where(instr_), ": ", n_ops, " operands for a group of ", n);
        return Grouped(w, [&]() -> Status {
          for (int64_t j = 0; j < n; ++j) {
            const size_t bytes = static_cast<size_t>(src(j).size);
            KILN_RETURN_IF_ERROR(w.Result(api.ncclSend(Ptr(params, src(j)), bytes, nccl::ncclInt8, static_cast<int>(group[j]), comm, s), "ncclSend", comm));
            KILN_RETURN_IF_ERROR(w.Result(api.ncclRecv(Ptr(params, results_[j]), bytes, nccl::ncclInt8, static_cast<int>(group[j]), comm, s), "ncclRecv", comm));
          }
          return OkStatus();
        });
      }
      for (size_t k = 0; k < n_ops; ++k) {
        const Shape& shape = operand_shapes_[k];
        if (shape.rank() == 0 || shape.dimensions(d) % n != 0)
          return InvalidArgument(Where(instr_), ": dimension ", d, " does not split into ", n, " chunks");
        const auto [outer, inner] = OuterAndInnerBytes(shape, d);
        const int64_t bytes = src(k).size;
        const int64_t chunk = bytes / n;
        const char* from = static_cast<const char*>(Ptr(params, src(k)));
        char* to = static_cast<char*>(Ptr(params, results_[k]));
        char* got = to;
        if (outer != 1) {
          KILN_RETURN_IF_ERROR(copier.ToChunks(s, from, outer, n, inner / n, ws));
          from = ws;
          got = ws + Align256(static_cast<uint64_t>(bytes));
        }
        KILN_RETURN_IF_ERROR(Grouped(w, [&]() -> Status {
          for (int64_t j = 0; j < n; ++j) {
            KILN_RETURN_IF_ERROR(w.Result(api.ncclSend(from + j * chunk, static_cast<size_t>(chunk), nccl::ncclInt8, static_cast<int>(group[j]), comm, s), "ncclSend", comm));
            KILN_RETURN_IF_ERROR(w.Result(api.ncclRecv(got + j * chunk, static_cast<size_t>(chunk), nccl::ncclInt8, static_cast<int>(group[j]), comm, s), "ncclRecv", comm));
          }
          return OkStatus();
        }));
        if (outer != 1) KILN_RETURN_IF_ERROR(copier.FromChunks(s, got, outer, n, inner / n, to));
      }
      return OkStatus();
    }
    case HloOpcode::kCollectivePermute: {
      KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(op_instr_, p->grid, me));
      const int64_t space = static_cast<int64_t>(dom.devices.size());
      std::optional<int64_t> source;
      std::vector<int64_t> targets;
      for (const auto& [a, b] : op_instr_.attrs().source_target_pairs) {
        if (a < 0 || a >= space || b < 0 || b >= space)
          return InvalidArgument(Where(instr_), ": pair {", a, ",", b, "} outside the ", space, " ids of the run");
        if (b == dom.my_id) source = a;
        if (a == dom.my_id) targets.push_back(b);
      }
      KILN_ASSIGN_OR_RETURN(ncclComm_t comm, w.World(me));
      if (!source)
        for (size_t k = 0; k < n_ops; ++k) KILN_RETURN_IF_ERROR(stream.Memset8(Mem(params, results_[k]), 0));
      if (!source && targets.empty()) return OkStatus();
      return Grouped(w, [&]() -> Status {
        for (size_t k = 0; k < n_ops; ++k) {
          const size_t bytes = static_cast<size_t>(src(k).size);
          for (int64_t t : targets)
            KILN_RETURN_IF_ERROR(w.Result(api.ncclSend(Ptr(params, src(k)), bytes, nccl::ncclInt8, static_cast<int>(dom.devices[t]), comm, s), "ncclSend", comm));
          if (source)
            KILN_RETURN_IF_ERROR(w.Result(api.ncclRecv(Ptr(params, results_[k]), bytes, nccl::ncclInt8, static_cast<int>(dom.devices[*source]), comm, s), "ncclRecv", comm));
        }
        return OkStatus();
      });
    }
    case HloOpcode::kCollectiveBroadcast: {
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> group, CollectiveGroupOf(op_instr_, p->grid, me));
      KILN_ASSIGN_OR_RETURN(ncclComm_t comm, w.Group(me, group));
      return Grouped(w, [&]() -> Status {
        for (size_t k = 0; k < n_ops; ++k)
          KILN_RETURN_IF_ERROR(w.Result(api.ncclBroadcast(Ptr(params, src(k)), Ptr(params, results_[k]), static_cast<size_t>(src(k).size),
                                                          nccl::ncclInt8, 0, comm, s), "ncclBroadcast", comm));
        return OkStatus();
      });
    }
    case HloOpcode::kSend: {
      KILN_ASSIGN_OR_RETURN(auto pairs, PairsOf(op_instr_));
      KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(op_instr_, p->grid, me));
      for (const auto& [a, b] : pairs) {
        if (a != dom.my_id) continue;
        if (b < 0 || b >= static_cast<int64_t>(dom.devices.size()))
          return InvalidArgument(Where(instr_), ": target ", b, " outside the ", dom.devices.size(), " ids of the run");
        p->pending_sends.push_back({Ptr(params, staged_[0]), static_cast<uint64_t>(staged_[0].size), dom.devices[b],
                                    ChannelOf(instr_)});
      }
      return OkStatus();
    }
    case HloOpcode::kRecv:
      return OkStatus();  // the data arrives at recv-done
    default:
      return Internal(Where(instr_), ": not an NCCL collective");
  }
}

// Note [Reductions NCCL lacks]: operand k of every member gathered into the workspace (a
// reduce-scatter's first put into rank-major chunks), then folded by kiln_combine_<k>.
Status CollectiveThunk::GatherAndCombine(const ThunkExecuteParams& params, runtime::Stream& stream, const NcclWorld& w,
                                         nccl::ncclComm_t comm, size_t k, int64_t n, int64_t rank) const {
  const Shape& shape = operand_shapes_[k];
  const BufferSlice& in = in_place_ ? results_[k] : !staged_.empty() ? staged_[k] : operands_[k];
  const CUstream s = Handle(stream);
  char* ws = static_cast<char*>(params.workspace.ptr);
  const int64_t bytes = in.size;
  const int64_t elements = shape.num_elements();
  const void* from = Ptr(params, in);
  char* all = ws;
  int64_t count = elements, offset = 0;
  if (op_ == HloOpcode::kReduceScatter) {
    const int64_t d = Dimension(op_instr_);
    if (shape.rank() == 0 || d >= shape.rank() || shape.dimensions(d) % n != 0)
      return InvalidArgument(Where(instr_), ": dimension ", d, " does not split into ", n, " chunks");
    const auto [outer, inner] = OuterAndInnerBytes(shape, d);
    if (outer != 1) {
      CudaDevice* dev = w.device(params.participant->device);
      if (dev == nullptr) return Internal(Where(instr_), ": no device for this rank");
      Copier copier{&dev->api(), reinterpret_cast<Memcpy2DFn>(dev->api().library.Symbol("cuMemcpy2DAsync_v2"))};
      KILN_RETURN_IF_ERROR(copier.ToChunks(s, from, outer, n, inner / n, ws));
      from = ws;
      all = ws + Align256(static_cast<uint64_t>(bytes));
    }
    count = elements / n;
    offset = rank * count;
  }
  KILN_RETURN_IF_ERROR(w.Result(w.api().ncclAllGather(from, all, static_cast<size_t>(bytes), nccl::ncclInt8, comm, s),
                                "ncclAllGather", comm));
  if (k >= kernels_.size()) return Internal(Where(instr_), ": no combine kernel for operand ", k);
  runtime::KernelArgs args;
  args.Add(static_cast<const void*>(all));
  args.Add(Ptr(params, results_[k]));
  args.Add(static_cast<long long>(count));
  args.Add(static_cast<long long>(elements));
  args.Add(static_cast<long long>(offset));
  args.Add(static_cast<int>(n));
  return stream.Launch(*kernels_[k], runtime::LaunchDims::Linear(static_cast<uint64_t>(count), 256), args);
}

// Note [Ragged all-to-all on NCCL]: `gathered[k]` (k = 0, 2, 3, 4) holds operand k of every
// member, n copies in rank order (a member alone: its own operands).
Status CollectiveThunk::RaggedCopy(const ThunkExecuteParams& params, runtime::Stream& stream,
                                   const void* const* gathered, int64_t n, int64_t rank) const {
  if (operands_.size() != 6 || results_.empty() || kernels_.empty())
    return Internal(Where(instr_), ": ragged-all-to-all takes 6 operands and its copy kernel");
  const Shape& in_shape = operand_shapes_[0];
  const Shape& out_shape = operand_shapes_[1];
  if (in_shape.rank() < 1 || out_shape.rank() < 1) return InvalidArgument(Where(instr_), " needs rank >= 1");
  const int64_t entries = operand_shapes_[2].num_elements();
  if (entries == 0 || entries % n != 0)
    return InvalidArgument(Where(instr_), ": ", entries, " offsets do not divide among ", n, " members");
  for (size_t k : {3, 4})
    if (operand_shapes_[k].num_elements() != entries)
      return InvalidArgument(Where(instr_), ": operand ", k, " has ", operand_shapes_[k].num_elements(), " entries, expected ", entries);
  const int64_t per = entries / n;
  if (n * per > 65535) return Unimplemented(Where(instr_), ": more than 65535 updates");
  // The result starts as `output`.
  if (operands_[1] != results_[0])
    KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(Mem(params, results_[0]), Mem(params, operands_[1]), results_[0].size));
  runtime::KernelArgs args;
  args.Add(gathered[0]);
  args.Add(static_cast<long long>(operands_[0].size));
  args.Add(gathered[2]);
  args.Add(gathered[3]);
  args.Add(gathered[4]);
  args.Add(static_cast<long long>(entries));
  args.Add(Ptr(params, results_[0]));
  args.Add(static_cast<int>(n));
  args.Add(static_cast<int>(per));
  args.Add(static_cast<int>(rank));
  args.Add(static_cast<long long>(in_shape.dimensions(0)));
  args.Add(static_cast<long long>(out_shape.dimensions(0)));
  args.Add(static_cast<long long>(SlabsOf(out_shape, 1).inner_bytes));
  runtime::LaunchDims dims;
  dims.grid.x = 16;
  dims.grid.y = static_cast<uint32_t>(n * per);
  dims.block.x = 256;
  return stream.Launch(*kernels_[0], dims, args);
}

// A participant alone without NCCL: every group has one member.
Status CollectiveThunk::RunAlone(const ThunkExecuteParams& params, runtime::Stream& stream) const {
  GpuParticipant alone;
  const GpuParticipant& p = params.participant ? *params.participant : alone;
  if (p.grid.num_devices() != 1)
    return FailedPrecondition(Where(instr_), ": a run of ", p.grid.num_devices(), " participants needs NCCL");
  auto src = [&](size_t k) -> const BufferSlice& {
    return in_place_ ? results_[k] : !staged_.empty() ? staged_[k] : operands_[k];
  };
  auto copy = [&](const BufferSlice& from, const BufferSlice& to) -> Status {
    if (from == to || to.size == 0) return OkStatus();
    return stream.MemcpyDeviceToDevice(Mem(params, to), Mem(params, from), std::min(from.size, to.size));
  };
  switch (op_) {
    case HloOpcode::kRaggedAllToAll: {
      const void* own[5] = {};
      for (size_t k : {0, 2, 3, 4}) own[k] = Ptr(params, operands_[k]);
      return RaggedCopy(params, stream, own, 1, 0);
    }
    case HloOpcode::kAllReduce: case HloOpcode::kAllGather: case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll: case HloOpcode::kCollectiveBroadcast:
      for (size_t k = 0; k < operands_.size() && k < results_.size(); ++k) KILN_RETURN_IF_ERROR(copy(src(k), results_[k]));
      return OkStatus();
    case HloOpcode::kCollectivePermute: {
      bool self = false;
      for (const auto& [a, b] : op_instr_.attrs().source_target_pairs) self |= a == 0 && b == 0;
      for (size_t k = 0; k < operands_.size(); ++k)
        KILN_RETURN_IF_ERROR(self ? copy(src(k), results_[k]) : stream.Memset8(Mem(params, results_[k]), 0));
      return OkStatus();
    }
    case HloOpcode::kSend: {
      KILN_ASSIGN_OR_RETURN(auto pairs, PairsOf(op_instr_));
      for (const auto& [a, b] : pairs)
        if (a == 0 && b == 0 && params.participant != nullptr)
          params.participant->pending_sends.push_back(
              {Ptr(params, staged_[0]), static_cast<uint64_t>(staged_[0].size), 0, ChannelOf(instr_)});
      return OkStatus();
    }
    case HloOpcode::kRecv:
      return OkStatus();
    default:
      return Internal(Where(instr_), ": not a collective");
  }
}

// ---- CollectiveDoneThunk ----

CollectiveDoneThunk::CollectiveDoneThunk(const HloInstruction& instr, const CollectiveThunk* start,
                                         std::vector<BufferSlice> sources, std::vector<BufferSlice> leaves)
    : GpuThunk(Kind::kCollective, instr.name()),
      instr_(instr),
      start_(start),
      sources_(std::move(sources)),
      leaves_(std::move(leaves)) {}

std::string CollectiveDoneThunk::ToString() const {
  return StrCat("collective %", name(), " ", HloOpcodeString(instr_.opcode()),
                start_ ? StrCat(" of %", start_->name()) : std::string());
}

Status CollectiveDoneThunk::Execute(const ThunkExecuteParams& params) const {
  runtime::Stream& main = *params.stream;
  GpuParticipant* p = params.participant;
  const HloOpcode op = instr_.opcode();
  if (op == HloOpcode::kSendDone || op == HloOpcode::kRecvDone) {
    // Note [Send and recv on NCCL]
    // This channel's queued sends go out now; the others wait for their own channel's done.
    std::vector<GpuParticipant::PendingSend> sends;
    if (p != nullptr) {
      const int64_t channel = ChannelOf(instr_);
      std::vector<GpuParticipant::PendingSend> others;
      for (const auto& snd : p->pending_sends) (snd.channel == channel ? sends : others).push_back(snd);
      p->pending_sends.swap(others);
    }
    std::optional<int64_t> source;
    if (op == HloOpcode::kRecvDone) {
      KILN_ASSIGN_OR_RETURN(auto pairs, PairsOf(instr_));
      GpuParticipant alone;
      const GpuParticipant& q = p ? *p : alone;
      KILN_ASSIGN_OR_RETURN(PermuteDomain dom, PermuteDomainOf(instr_, q.grid, q.device));
      for (const auto& [a, b] : pairs)
        if (b == dom.my_id && a >= 0 && a < static_cast<int64_t>(dom.devices.size())) source = dom.devices[a];
      if (leaves_.empty()) return Internal(Where(instr_), ": no data leaf");
      if (!source) KILN_RETURN_IF_ERROR(main.Memset8(Mem(params, leaves_[0]), 0));
    }
    // A receive from this participant itself needs its send queued first: no other
    // participant can provide the data, and NCCL would wait for it forever.
    const int64_t me = p == nullptr ? 0 : p->device;
    const GpuParticipant::PendingSend* self_send = nullptr;
    for (const auto& snd : sends)
      if (snd.peer == me && self_send == nullptr) self_send = &snd;
    if (source && *source == me && self_send == nullptr)
      return FailedPrecondition(Where(instr_), " receives from this participant itself (channel ",
                                instr_.attrs().channel_id.value_or(0),
                                "), but no send of the channel came before it: schedule the send first "
                                "(passes/send_recv_ordering.h orders send -> recv-done -> send-done)");
    if (p == nullptr || p->world == nullptr) {
      // Alone: a send to itself is the data it receives.
      if (source)
        KILN_RETURN_IF_ERROR(main.MemcpyDeviceToDevice(Mem(params, leaves_[0]),
                                                       runtime::DeviceMemory{const_cast<void*>(self_send->data), self_send->bytes},
                                                       std::min<uint64_t>(self_send->bytes, leaves_[0].size)));
      return OkStatus();
    }
    if (sends.empty() && !source) return OkStatus();
    NcclWorld& w = *p->world;
    KILN_ASSIGN_OR_RETURN(ncclComm_t comm, w.World(p->device));
    const CUstream s = Handle(main);
    return Grouped(w, [&]() -> Status {
      for (const auto& snd : sends)
        KILN_RETURN_IF_ERROR(w.Result(w.api().ncclSend(snd.data, snd.bytes, nccl::ncclInt8, static_cast<int>(snd.peer), comm, s), "ncclSend", comm));
      if (source)
        KILN_RETURN_IF_ERROR(w.Result(w.api().ncclRecv(Ptr(params, leaves_[0]), static_cast<size_t>(leaves_[0].size), nccl::ncclInt8,
                                                       static_cast<int>(*source), comm, s), "ncclRecv", comm));
      return OkStatus();
    });
  }
  // Note [Collective streams]: wait for the start's collective stream, then take its result.
  if (start_ != nullptr && start_->done_event() != nullptr && op != HloOpcode::kAsyncUpdate)
    KILN_RETURN_IF_ERROR(main.WaitEvent(*start_->done_event()));
  for (size_t i = 0; i < leaves_.size() && i < sources_.size(); ++i)
    if (sources_[i] != leaves_[i] && leaves_[i].size > 0)
      KILN_RETURN_IF_ERROR(main.MemcpyDeviceToDevice(Mem(params, leaves_[i]), Mem(params, sources_[i]), leaves_[i].size));
  return OkStatus();
}

}  // namespace kiln::cuda
