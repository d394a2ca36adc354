#include "kiln/hlo/sharding_tiles.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "kiln/base/strings.h"

namespace kiln {

namespace {

// The tile assignment's devices in row-major order of tile_assignment_dims.
std::vector<int64_t> AssignmentDevices(const HloSharding& s) {
  if (!s.iota) return s.tile_assignment_devices;
  const std::vector<int64_t>& dims = s.iota_reshape_dims;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> perm = s.iota_transpose_perm;
  if (perm.empty()) {
    perm.resize(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
  }
  // out[index over permuted dims] = iota value at the unpermuted index.
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  std::vector<int64_t> out_dims(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out_dims[i] = dims[perm[i]];
  std::vector<int64_t> out(n), idx(dims.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t v = 0;
    for (size_t i = 0; i < dims.size(); ++i) v += idx[i] * strides[perm[i]];
    out[k] = v;
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

// Copies the block of dims `local` at `offsets` between a global array and a local one.
void CopyBlock(uint8_t* global, const std::vector<int64_t>& gdims, uint8_t* local,
               const std::vector<int64_t>& ldims, const std::vector<int64_t>& offsets, int64_t width,
               bool to_global) {
  const size_t rank = ldims.size();
  if (rank == 0) {
    if (to_global)
      std::memcpy(global, local, width);
    else
      std::memcpy(local, global, width);
    return;
  }
  std::vector<int64_t> gstride(rank, width), lstride(rank, width);
  for (size_t i = rank; i-- > 1;) {
    gstride[i - 1] = gstride[i] * gdims[i];
    lstride[i - 1] = lstride[i] * ldims[i];
  }
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < rank; ++i) rows *= ldims[i];
  std::vector<int64_t> idx(rank, 0);
  const int64_t row_bytes = ldims[rank - 1] * width;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t g = 0, l = 0;
    for (size_t i = 0; i < rank; ++i) {
      g += (idx[i] + offsets[i]) * gstride[i];
      l += idx[i] * lstride[i];
    }
    if (to_global)
      std::memcpy(global + g, local + l, row_bytes);
    else
      std::memcpy(local + l, global + g, row_bytes);
    for (size_t i = rank - 1; i-- > 0;) {
      if (++idx[i] < ldims[i]) break;
      idx[i] = 0;
    }
  }
}

}  // namespace

StatusOr<std::optional<TilePlacement>> PlaceTile(const HloSharding& s, const std::vector<int64_t>& local,
                                                 int64_t device) {
  if (s.kind != HloSharding::Kind::kTiled) return std::optional<TilePlacement>();
  const std::vector<int64_t>& tdims = s.tile_assignment_dims;
  const size_t rank = local.size();
  const size_t extra = (s.replicate_on_last_tile_dim ? 1 : 0) + s.last_tile_dims.size();
  if (tdims.size() != rank + extra)
    return InvalidArgument("sharding tile assignment of rank ", tdims.size(), " for an array of rank ", rank);
  std::vector<int64_t> devices = AssignmentDevices(s);
  auto it = std::find(devices.begin(), devices.end(), device);
  if (it == devices.end()) return InvalidArgument("device ", device, " is not in the sharding's tile assignment");
  int64_t pos = it - devices.begin();
  std::vector<int64_t> idx(tdims.size());
  for (size_t i = tdims.size(); i-- > 0;) {
    idx[i] = pos % tdims[i];
    pos /= tdims[i];
  }
  TilePlacement t;
  for (size_t i = 0; i < rank; ++i) {
    t.offsets.push_back(idx[i] * local[i]);
    t.global_dims.push_back(local[i] * tdims[i]);
  }
  return std::optional<TilePlacement>(std::move(t));
}

Literal SplitTile(const Literal& global, const TilePlacement& place, const std::vector<int64_t>& local) {
  Literal tile(Shape::Array(global.shape().element_type(), local));
  CopyBlock(const_cast<uint8_t*>(global.untyped_data()), place.global_dims, tile.untyped_data(), local,
            place.offsets, PrimitiveByteWidth(global.shape().element_type()), false);
  return tile;
}

void JoinTile(const Literal& tile, const TilePlacement& place, Literal& global) {
  CopyBlock(global.untyped_data(), place.global_dims, const_cast<uint8_t*>(tile.untyped_data()),
            tile.shape().dimensions(), place.offsets, PrimitiveByteWidth(tile.shape().element_type()), true);
}

}  // namespace kiln
