// RowTilesThunk: runs a row-tiled chain of kernels (Note [Row tiling] in row_tiling.h) tile by
// tile: for each tile of rows, every member kernel in order on that tile's rows of its row
// operands and outputs (and the whole of its invariant operands). Tiles are independent and
// are spread over the pool (each tile's kernels run single-threaded on one thread). Values
// produced and consumed only inside the chain never reach the arena: each tile writes and reads
// them in a per-thread scratch buffer of tile_rows rows.
//
// The members' kernels are compiled from clones of their fusions with `tile_rows` rows (and,
// when the rows do not divide evenly, with the remainder): the thunk owns the module holding
// those clones, which the kernels point into.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/cpu/kernel.h"
#include "kiln/cpu/thunk.h"
#include "kiln/hlo/module.h"

namespace kiln::cpu {

class RowTilesThunk : public Thunk {
 public:
  struct Array {
    BufferSlice slice;   // the whole array
    Shape shape;         // the whole array's shape (row-major)
    bool rows = false;   // sliced by rows (else read whole by every tile)
    int scratch = -1;    // >= 0: a value internal to the chain, in the tile's scratch array
                         // `scratch` (rows; `slice` unused)
  };
  struct Member {
    std::string name;                          // the original instruction's
    std::vector<Array> inputs, outputs;        // as KernelThunk's (outputs always have rows)
    std::unique_ptr<CpuKernel> tile_kernel;    // for tile_rows rows
    std::unique_ptr<CpuKernel> rest_kernel;    // for the last tile's rows (null: none)
  };
  // scratch_row_bytes: per internal value, the bytes of one row (each tile gets tile_rows rows
  // of each, on the thread running it).
  RowTilesThunk(std::string name, std::shared_ptr<const HloModule> clones, std::vector<Member> members,
                std::vector<int64_t> scratch_row_bytes, int64_t rows, int64_t tile_rows, int64_t cost);

  int64_t members() const { return static_cast<int64_t>(members_.size()); }
  int64_t rows() const { return rows_; }
  int64_t tile_rows() const { return tile_rows_; }
  // "row-tiles %fusion.3..%fusion: 4 kernels over 2048 rows in tiles of 64 [...]".
  std::string ToString() const override;
  Status Execute(const ExecuteParams& params) const override;

 private:
  Status RunTile(const ExecuteParams& params, int64_t tile) const;

  std::shared_ptr<const HloModule> clones_;  // outlives members_ (declared first)
  std::vector<Member> members_;
  std::vector<int64_t> scratch_offset_;  // per internal value: offset in the tile's scratch
  int64_t scratch_bytes_ = 0;
  int64_t rows_, tile_rows_;
};

}  // namespace kiln::cpu
