// Tiles of a sharded array: where the tile of one device of a tiled HloSharding lies in the
// global array, and copying tiles out of (split) and into (join) the global array. Used by the
// `kiln` tool's .npz convention and the differential suite (docs/npz.md, docs/collectives.md).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/literal.h"

namespace kiln {

// The offsets of `device`'s tile in the global array of a tiled `sharding` whose tiles have
// the dimensions `local`, and the global dimensions; nullopt for a sharding that does not tile
// (replicated, maximal, manual, unknown, tuple). The trailing replication dimension
// (last_tile_dim_replicate) and subgroup dimensions (last_tile_dims) do not move the tile.
// InvalidArgument when the device is not in the tile assignment or the assignment does not fit
// the rank.
struct TilePlacement {
  std::vector<int64_t> offsets;
  std::vector<int64_t> global_dims;
};
StatusOr<std::optional<TilePlacement>> PlaceTile(const HloSharding& sharding,
                                                 const std::vector<int64_t>& local, int64_t device);

// The tile at `place` of the array `global` (its element type; dimensions place.global_dims),
// with dimensions `local`.
Literal SplitTile(const Literal& global, const TilePlacement& place, const std::vector<int64_t>& local);
// Writes `tile` into `global` at `place`.
void JoinTile(const Literal& tile, const TilePlacement& place, Literal& global);

}  // namespace kiln
