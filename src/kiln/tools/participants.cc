#include "kiln/tools/participants.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "kiln/base/npy.h"
#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/npy_literal.h"
#include "kiln/hlo/random_literal.h"

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

int64_t ShardingDeviceOf(int64_t participant, int64_t replicas, int64_t partitions) {
  (void)replicas;
  return partitions > 1 ? participant % partitions : participant;
}

StatusOr<std::vector<std::vector<Literal>>> MakeParticipantInputs(const HloModule& module, int64_t replicas,
                                                                  int64_t partitions, const InputOptions& options,
                                                                  std::vector<std::string>* notes) {
  const int64_t n = replicas * partitions;
  const HloComputation* entry = module.entry_computation();
  if (!entry) return InvalidArgument("module ", module.name(), " has no entry computation");
  std::vector<Shape> shapes;
  for (const HloInstruction* p : entry->parameter_instructions()) shapes.push_back(p->shape());
  std::vector<std::vector<Literal>> out(n);
  if (options.npz_path.empty() && !options.npz) {
    for (int64_t i = 0; i < n; ++i) {
      KILN_ASSIGN_OR_RETURN(out[i], CreateRandomArguments(shapes, options.seed + i));
    }
    if (notes && !shapes.empty())
      notes->push_back(StrCat("inputs: random, seed ", options.seed, " + participant"));
    return out;
  }
  std::optional<LoadedNpz> read;
  if (!options.npz) {
    KILN_ASSIGN_OR_RETURN(read, LoadedNpz::Read(options.npz_path));
  }
  const LoadedNpz& npz = options.npz ? *options.npz : *read;
  const std::string& path = npz.path();
  NpyToLiteralOptions conv;
  conv.allow_cast = options.allow_cast;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const HloInstruction* p = entry->parameter_instruction(static_cast<int64_t>(k));
    std::string shared = StrCat("in", k);
    if (!npz.Has(shared)) shared = p->name();
    bool any_own = false;
    for (int64_t i = 0; i < n; ++i) any_own |= npz.Has(StrCat("p", i, ".in", k));
    if (any_own) {
      for (int64_t i = 0; i < n; ++i) {
        const std::string key = StrCat("p", i, ".in", k);
        if (!npz.Has(key))
          return InvalidArgument(path, ": no member '", key, "' for parameter ", k, " of participant ", i,
                                 " (the .npz gives some participants their own)");
        auto lit = npz.ForParameter(key, shapes[k], conv);
        if (!lit.ok()) return lit.status().WithContext(StrCat("participant ", i, " parameter ", k));
        out[i].push_back(std::move(*lit));
      }
      if (notes) notes->push_back(StrCat("in", k, " ", shapes[k].ToString(false), " <- ", path, ":p*.in", k));
      continue;
    }
    if (!npz.Has(shared))
      return InvalidArgument(path, ": no input for parameter ", k, " (", p->name(), ": ", shapes[k].ToString(false),
                             "); expected 'p<i>.in", k, "' for every participant, 'in", k, "' or '", p->name(), "'");
    const NpyArray* a = npz.Find(shared);
    const bool local_shape = shapes[k].IsArray() && a->shape == shapes[k].dimensions();
    if (local_shape || !p->sharding() || !shapes[k].IsArray()) {
      auto lit = npz.ForParameter(shared, shapes[k], conv);
      if (!lit.ok()) return lit.status().WithContext(StrCat("parameter ", k, " (", p->name(), ")"));
      for (int64_t i = 0; i < n; ++i) out[i].push_back(*lit);
      if (notes) notes->push_back(StrCat("in", k, " ", shapes[k].ToString(false), " <- ", path, ":", shared,
                                         " (every participant)"));
      continue;
    }
    // A global array: split by the parameter's sharding.
    const std::vector<int64_t>& local = shapes[k].dimensions();
    KILN_ASSIGN_OR_RETURN(auto first, PlaceTile(*p->sharding(), local, ShardingDeviceOf(0, replicas, partitions)));
    if (!first)
      return InvalidArgument(path, ":", shared, " is ", StrJoin(a->shape, "x"), " but parameter ", k, " is ",
                             shapes[k].ToString(false), " and its sharding does not tile it");
    Shape global = Shape::Array(shapes[k].element_type(), first->global_dims);
    auto whole = npz.ForParameter(shared, global, conv);
    if (!whole.ok()) return whole.status().WithContext(StrCat("parameter ", k, " (global, split by its sharding)"));
    const int64_t width = PrimitiveByteWidth(shapes[k].element_type());
    for (int64_t i = 0; i < n; ++i) {
      KILN_ASSIGN_OR_RETURN(auto place, PlaceTile(*p->sharding(), local, ShardingDeviceOf(i, replicas, partitions)));
      Literal tile(Shape::Array(shapes[k].element_type(), local));
      CopyBlock(whole->untyped_data(), place->global_dims, tile.untyped_data(), local, place->offsets, width, false);
      out[i].push_back(std::move(tile));
    }
    if (notes) notes->push_back(StrCat("in", k, " ", global.ToString(false), " <- ", path, ":", shared,
                                       ", split into ", shapes[k].ToString(false), " tiles by its sharding"));
  }
  return out;
}

StatusOr<std::vector<std::pair<std::string, Literal>>> ParticipantOutputs(const HloModule& module,
                                                                          int64_t replicas, int64_t partitions,
                                                                          const std::vector<Literal>& results) {
  std::vector<std::pair<std::string, Literal>> out;
  std::vector<std::vector<const Literal*>> leaves;
  for (size_t i = 0; i < results.size(); ++i) {
    leaves.push_back(ArrayLeaves(results[i]));
    for (size_t j = 0; j < leaves[i].size(); ++j) out.emplace_back(StrCat("p", i, ".out", j), *leaves[i][j]);
  }
  const HloInstruction* root = module.entry_computation()->root_instruction();
  if (!root->sharding() || leaves.empty()) return out;
  std::vector<const HloSharding*> per_leaf;
  if (root->sharding()->kind == HloSharding::Kind::kTuple) {
    for (const HloSharding& e : root->sharding()->tuple_elements) per_leaf.push_back(&e);
  } else {
    per_leaf.assign(leaves[0].size(), &*root->sharding());
  }
  for (size_t j = 0; j < leaves[0].size() && j < per_leaf.size(); ++j) {
    const HloSharding& s = *per_leaf[j];
    const Literal& l0 = *leaves[0][j];
    if (s.kind == HloSharding::Kind::kReplicated || s.kind == HloSharding::Kind::kMaximal) {
      out.emplace_back(StrCat("out", j), l0);
      continue;
    }
    const std::vector<int64_t> local = l0.shape().dimensions();
    KILN_ASSIGN_OR_RETURN(auto first, PlaceTile(s, local, ShardingDeviceOf(0, replicas, partitions)));
    if (!first) continue;
    Literal global(Shape::Array(l0.shape().element_type(), first->global_dims));
    const int64_t width = PrimitiveByteWidth(l0.shape().element_type());
    for (size_t i = 0; i < results.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(auto place, PlaceTile(s, local, ShardingDeviceOf(i, replicas, partitions)));
      Literal tile = *leaves[i][j];
      CopyBlock(global.untyped_data(), place->global_dims, tile.untyped_data(), local, place->offsets, width, true);
    }
    out.emplace_back(StrCat("out", j), std::move(global));
  }
  return out;
}

Status WriteNamedOutputs(const std::string& path, const std::vector<std::pair<std::string, Literal>>& outputs,
                         bool raw_bits) {
  std::vector<NpzMember> members;
  LiteralToNpyOptions opts;
  opts.raw_bits = raw_bits;
  for (const auto& [name, l] : outputs) KILN_RETURN_IF_ERROR(AppendLiteralToNpz(l, name, opts, members));
  return WriteNpzFile(path, members);
}

}  // namespace kiln
