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
#include "kiln/hlo/sharding_tiles.h"

namespace kiln {

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
    for (int64_t i = 0; i < n; ++i) {
      KILN_ASSIGN_OR_RETURN(auto place, PlaceTile(*p->sharding(), local, ShardingDeviceOf(i, replicas, partitions)));
      out[i].push_back(SplitTile(*whole, *place, local));
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
    for (size_t i = 0; i < results.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(auto place, PlaceTile(s, local, ShardingDeviceOf(i, replicas, partitions)));
      JoinTile(*leaves[i][j], *place, global);
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

int CompileOptionsAndGrid(const Client& client, const CompileFlags& flags, const HloModule& module,
                          CompileOptions* options, std::pair<int64_t, int64_t>* grid) {
  auto o = MakeCompileOptions(client, flags);
  if (!o.ok()) {
    PrintError(o.status().message());
    return kExitUsage;
  }
  auto g = ParticipantsOf(module, *o);
  if (!g.ok()) {
    PrintError(g.status().message());
    return kExitUsage;
  }
  *options = std::move(*o);
  *grid = *g;
  return 0;
}

int CompileForParticipants(const Client& client, const HloModule& module, const DeviceSelection& device,
                           const CompileOptions& options, int64_t replicas, int64_t partitions,
                           std::unique_ptr<Executable>* exe) {
  auto e = client.Compile(module, Client::DeviceName(device), options);
  if (!e.ok()) {
    PrintError(StrCat(device.backend->name(), ": ", e.status().message()));
    return CompileErrorExitCode(e.status());
  }
  if ((*e)->num_participants() != replicas * partitions) {
    PrintError(StrCat(device.backend->name(), " runs one participant; ", module.name(), " asks for ", replicas,
                      " replicas x ", partitions, " partitions (--replicas 1 --partitions 1 runs one)"));
    return kExitFailure;
  }
  *exe = std::move(*e);
  return 0;
}

}  // namespace kiln
