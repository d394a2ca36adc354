#include "kiln/cpu/row_tiles_thunk.h"

#include <cstdint>
#include <mutex>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/stream_store.h"

namespace kiln::cpu {

namespace {

std::vector<BufferUse> UsesOf(const std::vector<RowTilesThunk::Member>& members) {
  std::vector<BufferUse> uses;
  for (const auto& m : members) {
    for (const auto& a : m.inputs)
      if (a.scratch < 0) uses.push_back(BufferUse::Read(a.slice));
    for (const auto& a : m.outputs)
      if (a.scratch < 0) uses.push_back(BufferUse::Write(a.slice));
  }
  return uses;
}

}  // namespace

RowTilesThunk::RowTilesThunk(std::string name, std::shared_ptr<const HloModule> clones,
                             std::vector<Member> members, std::vector<int64_t> scratch_row_bytes, int64_t rows,
                             int64_t tile_rows, int64_t cost)
    : Thunk(Kind::kRowTiles, std::move(name), UsesOf(members), cost), clones_(std::move(clones)),
      members_(std::move(members)), rows_(rows), tile_rows_(tile_rows) {
  for (int64_t b : scratch_row_bytes) {
    scratch_offset_.push_back(scratch_bytes_);
    scratch_bytes_ += (b * tile_rows_ + 63) / 64 * 64;  // 64-byte aligned arrays
  }
}

std::string RowTilesThunk::ToString() const {
  std::vector<std::string> names;
  for (const auto& m : members_) names.push_back(StrCat("%", m.name, " ", m.tile_kernel->name()));
  return StrCat("row-tiles %", name(), ": ", members_.size(), " kernels over ", rows_, " rows in tiles of ",
                tile_rows_, ", ", scratch_offset_.size(), " values in ", scratch_bytes_, " B of scratch per tile [",
                StrJoin(names, "; "), "] cost ", cost());
}

Status RowTilesThunk::RunTile(const ExecuteParams& params, int64_t tile) const {
  const int64_t r0 = tile * tile_rows_;
  const int64_t nr = std::min(tile_rows_, rows_ - r0);
  thread_local std::vector<ArrayView> in, out;
  thread_local std::vector<uint8_t> scratch_storage;
  if (static_cast<int64_t>(scratch_storage.size()) < scratch_bytes_ + 64) scratch_storage.resize(scratch_bytes_ + 64);
  uint8_t* scratch = scratch_storage.data();
  scratch += (64 - reinterpret_cast<uintptr_t>(scratch) % 64) % 64;
  for (const Member& m : members_) {
    KernelContext ctx;  // single-threaded: the tiles are the parallelism
    // Tiles of a large arena array: streamed (Note [Streaming stores] in kernels/loop_kernel.cc).
    int64_t out_bytes = 0;
    for (const Array& a : m.outputs)
      if (a.scratch < 0) out_bytes += a.slice.size;
    ctx.stream_outputs = out_bytes >= internal::kStreamOutputBytes;
    const CpuKernel* kernel = nr == tile_rows_ ? m.tile_kernel.get() : m.rest_kernel.get();
    if (!kernel) return Internal("cpu: row tiles %", name(), ": no kernel for ", nr, " rows");
    auto view = [&](const Array& a, ArrayView& v) -> Status {
      v.shape = a.shape;
      if (a.scratch >= 0) {
        v.data = scratch + scratch_offset_[a.scratch];
        v.shape.set_dimensions(0, nr);
        return OkStatus();
      }
      KILN_ASSIGN_OR_RETURN(uint8_t * p, params.buffers->Get(a.slice));
      if (a.rows) {
        const int64_t row_bytes = a.slice.size / rows_;
        p += r0 * row_bytes;
        v.shape.set_dimensions(0, nr);
      }
      v.data = p;
      return OkStatus();
    };
    in.resize(m.inputs.size());
    out.resize(m.outputs.size());
    for (size_t i = 0; i < m.inputs.size(); ++i) KILN_RETURN_IF_ERROR(view(m.inputs[i], in[i]));
    for (size_t i = 0; i < m.outputs.size(); ++i) KILN_RETURN_IF_ERROR(view(m.outputs[i], out[i]));
    Status s = kernel->Run(in, out, ctx);
    if (!s.ok()) return s.WithContext(StrCat("%", m.name, " rows ", r0, "..", r0 + nr));
  }
  return OkStatus();
}

Status RowTilesThunk::Execute(const ExecuteParams& params) const {
  const int64_t tiles = (rows_ + tile_rows_ - 1) / tile_rows_;
  if (!params.pool || params.pool->num_threads() < 1 || tiles < 2) {
    for (int64_t t = 0; t < tiles; ++t) KILN_RETURN_IF_ERROR(RunTile(params, t));
    return OkStatus();
  }
  std::mutex mu;
  Status first;
  params.pool->ParallelFor(tiles, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      Status s = RunTile(params, t);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = std::move(s);
        return;
      }
    }
  });
  return first;
}

}  // namespace kiln::cpu
