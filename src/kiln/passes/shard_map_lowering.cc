#include "kiln/passes/shard_map_lowering.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/shape_inference.h"

namespace kiln {
namespace {

constexpr std::string_view kGlobalToLocal = "xla.sdy.GlobalToLocalShape";
constexpr std::string_view kLocalToGlobal = "xla.sdy.LocalToGlobalShape";
constexpr std::string_view kFuncResultSharding = "xla.sdy.FuncResultSharding";
constexpr std::string_view kFullToShard = "SPMDFullToShardShape";
constexpr std::string_view kShardToFull = "SPMDShardToFullShape";
constexpr std::string_view kSharding = "Sharding";

bool IsCall(const HloInstruction* i, std::string_view target) {
  return i->opcode() == HloOpcode::kCustomCall && i->attrs().custom_call_target == target;
}

std::string Where(const HloInstruction& i) {
  return StrCat("%", i.name(), i.location().line > 0 ? StrCat(" at line ", i.location().line) : std::string());
}

// The devices of the largest mesh in xla.sdy.meshes ({mesh = #sdy.mesh<["x"=2, "y"=4]>}): the
// product of its axis sizes; 0 without the attribute.
int64_t MeshDevices(const HloModule& m) {
  for (const auto& [k, v] : m.header().frontend_attributes) {
    if (k != "xla.sdy.meshes") continue;
    int64_t best = 0;
    size_t pos = 0;
    while ((pos = v.find("#sdy.mesh<", pos)) != std::string::npos) {
      size_t end = v.find('>', pos);
      if (end == std::string::npos) end = v.size();
      int64_t product = 1;
      for (size_t i = pos; i < end; ++i) {
        if (v[i] != '=' || i + 1 >= end || !std::isdigit(static_cast<unsigned char>(v[i + 1]))) continue;
        int64_t n = 0;
        for (size_t j = i + 1; j < end && std::isdigit(static_cast<unsigned char>(v[j])); ++j) n = n * 10 + (v[j] - '0');
        product *= n;
      }
      best = std::max(best, product);
      pos = end;
    }
    return best;
  }
  return 0;
}

// Devices of a tiled sharding's tile assignment (0 for other kinds).
int64_t ShardingDevices(const HloSharding& s) {
  if (s.kind == HloSharding::Kind::kTuple) {
    int64_t best = 0;
    for (const HloSharding& e : s.tuple_elements) best = std::max(best, ShardingDevices(e));
    return best;
  }
  if (s.kind != HloSharding::Kind::kTiled) return 0;
  int64_t n = 1;
  for (int64_t d : s.tile_assignment_dims) n *= d;
  return n;
}

bool IsTiled(const HloSharding& s) {
  if (s.kind == HloSharding::Kind::kTuple)
    return std::any_of(s.tuple_elements.begin(), s.tuple_elements.end(), IsTiled);
  if (s.kind != HloSharding::Kind::kTiled) return false;
  int64_t n = 1;
  for (int64_t d : s.tile_assignment_dims) n *= d;
  return n > 1;
}

// Replaces `instr`'s value: an array by `values[0]`, a tuple (whose users are
// get-tuple-elements) element by element.
Status ReplaceValue(HloInstruction* instr, const std::vector<HloInstruction*>& values) {
  if (!instr->shape().IsTuple()) {
    if (values.size() != 1) return Internal(Where(*instr), ": one value expected");
    instr->ReplaceAllUsesWith(values[0]);
    return OkStatus();
  }
  const std::vector<HloInstruction*> users = instr->users();
  for (HloInstruction* u : users) {
    if (u->opcode() != HloOpcode::kGetTupleElement)
      return InvalidArgument(Where(*instr), " is used by ", Where(*u),
                             " as a tuple; kiln lowers shard_map programs whose tuple results are read "
                             "element by element");
    const int64_t k = u->attrs().tuple_index;
    if (k < 0 || k >= static_cast<int64_t>(values.size())) return InvalidArgument(Where(*u), ": index out of range");
    u->ReplaceAllUsesWith(values[k]);
  }
  return OkStatus();
}

// Removes instructions of `c` that nothing uses (parameters and the root stay).
Status RemoveDead(HloComputation& c) {
  for (bool again = true; again;) {
    again = false;
    for (HloInstruction* i : c.MakeInstructionPostOrder()) {
      if (i == c.root_instruction() || i->opcode() == HloOpcode::kParameter || i->user_count() > 0) continue;
      KILN_RETURN_IF_ERROR(c.RemoveInstruction(i));
      again = true;
    }
  }
  return OkStatus();
}

// ---- Shardy shardings -> HloSharding (for the parameters and results that carry only an
// #sdy.sharding_per_value, as jax writes them for meshes of Auto axes) ----

struct MeshAxes {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
};

std::string Unescape(std::string_view v) {
  std::string out;
  for (char c : v)
    if (c != '\\') out += c;
  return out;
}

// The axes of mesh `name` in xla.sdy.meshes ({mesh = #sdy.mesh<["x"=2, "y"=4]>, ...}).
std::optional<MeshAxes> FindMesh(const HloModule& m, std::string_view name) {
  for (const auto& [k, raw] : m.header().frontend_attributes) {
    if (k != "xla.sdy.meshes") continue;
    const std::string v = Unescape(raw);
    size_t pos = 0;
    while ((pos = v.find("#sdy.mesh<", pos)) != std::string::npos) {
      // The mesh's name precedes " = #sdy.mesh<".
      size_t eq = v.rfind('=', pos);
      size_t start = v.find_last_of("{, ", eq == std::string::npos ? 0 : eq - 2);
      std::string mesh_name(StripWhitespace(v.substr(start == std::string::npos ? 0 : start + 1,
                                                      eq == std::string::npos ? 0 : eq - start - 1)));
      size_t end = v.find('>', pos);
      if (end == std::string::npos) return std::nullopt;
      MeshAxes axes;
      for (size_t q = v.find('"', pos); q != std::string::npos && q < end; q = v.find('"', q)) {
        size_t q2 = v.find('"', q + 1);
        if (q2 == std::string::npos || v[q2 + 1] != '=') return std::nullopt;
        axes.names.push_back(v.substr(q + 1, q2 - q - 1));
        int64_t n = 0;
        size_t j = q2 + 2;
        for (; j < end && std::isdigit(static_cast<unsigned char>(v[j])); ++j) n = n * 10 + (v[j] - '0');
        axes.sizes.push_back(n);
        q = j;
      }
      if (mesh_name == name) return axes;
      pos = end;
    }
  }
  return std::nullopt;
}

// The values of an #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, ...]>: per value, the mesh
// name and per dimension the axes that split it.
struct SdySharding {
  std::string mesh;
  std::vector<std::vector<std::string>> dims;
};
std::optional<std::vector<SdySharding>> ParsePerValue(std::string_view raw) {
  const std::string v = Unescape(raw);
  std::vector<SdySharding> out;
  size_t pos = v.find("[<");
  if (pos == std::string::npos) return std::nullopt;
  while ((pos = v.find("<@", pos)) != std::string::npos) {
    SdySharding s;
    size_t comma = v.find(',', pos);
    if (comma == std::string::npos) return std::nullopt;
    s.mesh = v.substr(pos + 2, comma - pos - 2);
    size_t open = v.find('[', comma), close = v.find(']', open);
    if (open == std::string::npos || close == std::string::npos) return std::nullopt;
    for (size_t b = v.find('{', open); b != std::string::npos && b < close; b = v.find('{', b + 1)) {
      size_t e = v.find('}', b);
      std::vector<std::string> axes;
      for (size_t q = v.find('"', b); q != std::string::npos && q < e;) {
        size_t q2 = v.find('"', q + 1);
        if (q2 == std::string::npos) return std::nullopt;
        axes.push_back(v.substr(q + 1, q2 - q - 1));
        q = v.find('"', q2 + 1);
      }
      s.dims.push_back(std::move(axes));
    }
    out.push_back(std::move(s));
    pos = close;
  }
  return out;
}

// An HloSharding with an explicit tile assignment for `s` over `mesh` (devices numbered
// row-major over the mesh axes); nullopt when an axis is unknown.
std::optional<HloSharding> ToHloSharding(const SdySharding& s, const MeshAxes& mesh) {
  const size_t naxes = mesh.names.size();
  std::vector<bool> used(naxes, false);
  std::vector<std::vector<size_t>> dim_axes;
  HloSharding h;
  h.kind = HloSharding::Kind::kTiled;
  for (const auto& axes : s.dims) {
    std::vector<size_t> idx;
    int64_t tiles = 1;
    for (const std::string& a : axes) {
      auto it = std::find(mesh.names.begin(), mesh.names.end(), a);
      if (it == mesh.names.end()) return std::nullopt;
      const size_t k = it - mesh.names.begin();
      used[k] = true;
      idx.push_back(k);
      tiles *= mesh.sizes[k];
    }
    dim_axes.push_back(std::move(idx));
    h.tile_assignment_dims.push_back(tiles);
  }
  int64_t replicas = 1, devices = 1;
  for (size_t k = 0; k < naxes; ++k) {
    devices *= mesh.sizes[k];
    if (!used[k]) replicas *= mesh.sizes[k];
  }
  bool tiled = false;
  for (int64_t t : h.tile_assignment_dims) tiled |= t > 1;
  if (!tiled) {
    HloSharding r;
    r.kind = HloSharding::Kind::kReplicated;
    return r;
  }
  if (replicas > 1) {
    h.tile_assignment_dims.push_back(replicas);
    h.replicate_on_last_tile_dim = true;
  }
  h.tile_assignment_devices.assign(devices, 0);
  std::vector<int64_t> coord(naxes, 0);
  for (int64_t d = 0; d < devices; ++d) {
    int64_t rem = d;
    for (size_t k = naxes; k-- > 0;) {
      coord[k] = rem % mesh.sizes[k];
      rem /= mesh.sizes[k];
    }
    int64_t pos = 0;
    for (size_t dim = 0; dim < dim_axes.size(); ++dim) {
      int64_t t = 0;
      for (size_t k : dim_axes[dim]) t = t * mesh.sizes[k] + coord[k];
      pos = pos * h.tile_assignment_dims[dim] + t;
    }
    if (replicas > 1) {
      int64_t r = 0;
      for (size_t k = 0; k < naxes; ++k)
        if (!used[k]) r = r * mesh.sizes[k] + coord[k];
      pos = pos * replicas + r;
    }
    h.tile_assignment_devices[pos] = d;
  }
  return h;
}

// The HloShardings of a custom call's frontend attribute `key` (an #sdy.sharding_per_value);
// empty when it has none or it cannot be read.
std::vector<std::optional<HloSharding>> SdyShardings(const HloModule& m, const HloInstruction& i,
                                                     std::string_view key) {
  std::vector<std::optional<HloSharding>> out;
  for (const auto& [k, v] : i.frontend_attributes()) {
    if (k != key) continue;
    auto values = ParsePerValue(v);
    if (!values) return {};
    for (const SdySharding& s : *values) {
      auto mesh = FindMesh(m, s.mesh);
      out.push_back(mesh ? ToHloSharding(s, *mesh) : std::nullopt);
    }
  }
  return out;
}

}  // namespace

bool IsShardMapProgram(const HloModule& module) {
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return false;
  for (const HloInstruction* i : entry->instructions())
    if (IsCall(i, kGlobalToLocal) || IsCall(i, kFullToShard) || IsCall(i, kLocalToGlobal) || IsCall(i, kShardToFull))
      return true;
  return false;
}

StatusOr<bool> LowerShardMap(HloModule& module) {
  HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return false;
  if (!IsShardMapProgram(module)) {
    // Nothing to lower; a sharded program that nobody partitioned cannot run as it is.
    if (module.header().num_partitions > 1 || module.header().replica_count > 1) return false;
    // A partitioned per-device program (an XLA dump after spmd-partitioning, whose header may
    // leave num_partitions out) has collectives or partition-id; an unpartitioned one has none.
    for (const HloComputation* c : module.computations())
      for (const HloInstruction* i : c->instructions())
        if (IsCollectiveOpcode(i->opcode()) || i->opcode() == HloOpcode::kPartitionId ||
            i->opcode() == HloOpcode::kReplicaId || i->opcode() == HloOpcode::kSend ||
            i->opcode() == HloOpcode::kRecv)
          return false;
    for (const HloInstruction* p : entry->parameter_instructions())
      if (p->sharding() && IsTiled(*p->sharding()))
        return InvalidArgument(
            "parameter ", p->parameter_number(), " (", Where(*p), ") of ", module.name(), " has sharding ",
            "over several devices but the module is not partitioned (num_partitions=1, no shard_map): kiln has no "
            "automatic SPMD partitioner. Run it as XLA partitions it (a dump after spmd-partitioning, with "
            "num_partitions in its header), write the program with shard_map, or drop the shardings");
    return false;
  }
  // 1. The entry parameters take their local shapes.
  for (HloInstruction* i : entry->MakeInstructionPostOrder()) {
    if (IsCall(i, kGlobalToLocal)) {
      const auto shardings = SdyShardings(module, *i, "xla.sdy.in_shardings");
      std::vector<HloInstruction*> values;
      for (int64_t k = 0; k < i->operand_count(); ++k) {
        HloInstruction* p = i->operand(k);
        const Shape& local = i->shape().IsTuple() ? i->shape().tuple_shapes(k) : i->shape();
        if (p->opcode() != HloOpcode::kParameter)
          return InvalidArgument(Where(*i), ": the shard_map's input ", k, " is computed from global arrays (",
                                 Where(*p), "); kiln runs shard_map programs whose inputs are entry parameters "
                                 "(no SPMD partitioner for the code around the shard_map)");
        p->set_shape(local);
        // Meshes of Auto axes leave the parameter without sharding={...}: say it from Shardy's.
        if (!p->sharding() && k < static_cast<int64_t>(shardings.size()) && shardings[k]) p->set_sharding(shardings[k]);
        values.push_back(p);
      }
      KILN_RETURN_IF_ERROR(ReplaceValue(i, values));
    } else if (IsCall(i, kFullToShard)) {
      HloInstruction* src = i->operand(0);
      if (IsCall(src, kSharding)) src = src->operand(0);
      if (src->opcode() != HloOpcode::kParameter)
        return InvalidArgument(Where(*i), ": the shard_map's input is computed from global arrays (", Where(*src),
                               "); kiln runs shard_map programs whose inputs are entry parameters");
      src->set_shape(i->shape());
      i->ReplaceAllUsesWith(src);
    }
  }
  // 2. The outputs stay local: the joins and the result annotations pass their operand on.
  std::vector<std::optional<HloSharding>> out_shardings;
  for (HloInstruction* i : entry->MakeInstructionPostOrder()) {
    if (IsCall(i, kLocalToGlobal)) {
      std::vector<HloInstruction*> values(i->operands().begin(), i->operands().end());
      out_shardings = SdyShardings(module, *i, "xla.sdy.out_shardings");
      KILN_RETURN_IF_ERROR(ReplaceValue(i, values));
      if (entry->root_instruction() == i && values.size() == 1) entry->set_root_instruction(values[0]);
    } else if (IsCall(i, kShardToFull) || IsCall(i, kFuncResultSharding) || IsCall(i, kSharding)) {
      if (i->operand_count() != 1) return InvalidArgument(Where(*i), ": one operand expected");
      HloInstruction* v = i->operand(0);
      i->ReplaceAllUsesWith(v);
      if (entry->root_instruction() == i) {
        if (i->sharding() && !v->sharding()) v->set_sharding(i->sharding());
        entry->set_root_instruction(v);
      }
    }
  }
  KILN_RETURN_IF_ERROR(RemoveDead(*entry));
  // The root says how the outputs join; from Shardy's out_shardings where it does not.
  HloInstruction* root = entry->root_instruction();
  if (!root->sharding() && !out_shardings.empty()) {
    bool all = true;
    for (const auto& o : out_shardings) all &= o.has_value();
    if (all && root->shape().IsTuple() &&
        static_cast<int64_t>(out_shardings.size()) == root->shape().tuple_shapes_size()) {
      HloSharding t;
      t.kind = HloSharding::Kind::kTuple;
      for (const auto& o : out_shardings) t.tuple_elements.push_back(*o);
      root->set_sharding(t);
    } else if (all && out_shardings.size() == 1) {
      root->set_sharding(out_shardings[0]);
    }
  }
  // 3. What is left between the parameters and the root must not depend on global shapes:
  //    tuples and get-tuple-elements take their operands' new shapes; anything else that still
  //    sees a changed operand would compute on global arrays.
  for (HloInstruction* i : entry->MakeInstructionPostOrder()) {
    if (i->opcode() == HloOpcode::kTuple) {
      std::vector<Shape> parts;
      for (const HloInstruction* o : i->operands()) parts.push_back(o->shape());
      i->set_shape(Shape::Tuple(std::move(parts)));
    } else if (i->opcode() == HloOpcode::kGetTupleElement) {
      i->set_shape(i->operand(0)->shape().tuple_shapes(i->attrs().tuple_index));
    } else if (i->opcode() == HloOpcode::kCall) {
      const HloComputation* body = i->called_computations()[0];
      for (int64_t k = 0; k < i->operand_count(); ++k)
        if (!Shape::Compatible(i->operand(k)->shape(), body->parameter_instruction(k)->shape()))
          return InvalidArgument(Where(*i), ": operand ", k, " is ", i->operand(k)->shape().ToString(false),
                                 " but ", body->name(), " takes ", body->parameter_instruction(k)->shape().ToString(false),
                                 "; kiln runs shard_map programs without code on global arrays around them");
    } else if (i->opcode() != HloOpcode::kParameter) {
      // Shape inference is the judge: an op whose declared shape no longer follows from its
      // operands computed on global arrays.
      StatusOr<Shape> inferred = InferShape(*i);
      if (!inferred.ok() || !Shape::Compatible(*inferred, i->shape()))
        return InvalidArgument(Where(*i), " computes on global arrays outside the shard_map; kiln has no SPMD "
                               "partitioner for code around a shard_map");
    }
  }
  // Leftover users of a parameter whose shape changed, other than the shard_map: refuse.
  for (HloInstruction* p : entry->parameter_instructions())
    for (const HloInstruction* u : p->users())
      if (u->opcode() != HloOpcode::kCall && u->opcode() != HloOpcode::kTuple && u != entry->root_instruction())
        return InvalidArgument(Where(*u), " uses entry parameter ", p->parameter_number(),
                               " outside the shard_map (on the global array); kiln has no SPMD partitioner for it");
  int64_t devices = MeshDevices(module);
  for (const HloInstruction* p : entry->parameter_instructions())
    if (p->sharding()) devices = std::max(devices, ShardingDevices(*p->sharding()));
  if (entry->root_instruction()->sharding())
    devices = std::max(devices, ShardingDevices(*entry->root_instruction()->sharding()));
  if (devices < 1) devices = 1;
  module.header().num_partitions = devices;
  module.header().replica_count = 1;
  module.header().entry_computation_layout.reset();
  return true;
}

}  // namespace kiln
