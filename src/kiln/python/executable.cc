#include "kiln/python/executable.h"

#include <algorithm>

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/sharding_tiles.h"
#include "kiln/passes/shard_map_lowering.h"
#include "kiln/python/array.h"
#include "kiln/python/cuda_sync.h"
#include "kiln/python/errors.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

// (hlo type, dims, minor_to_major or None, donated) of one leaf.
nb::tuple LeafInfo(const Shape& s, bool donated) {
  nb::list dims;
  for (int64_t d : s.dimensions()) dims.append(d);
  nb::object layout = nb::none();
  if (s.has_layout()) {
    nb::list m2m;
    for (int64_t d : s.layout().minor_to_major()) m2m.append(d);
    layout = nb::tuple(m2m);
  }
  return nb::make_tuple(std::string(PrimitiveTypeName(s.element_type())), nb::tuple(dims), layout, donated);
}

// The nesting of result leaves: an int (the leaf index) for an array, a tuple for a tuple.
nb::object Structure(const Shape& shape, int64_t& next) {
  if (shape.IsTuple()) {
    nb::list l;
    for (const Shape& e : shape.tuple_shapes()) {
      if (e.IsToken()) continue;
      l.append(Structure(e, next));
    }
    return nb::tuple(l);
  }
  return nb::int_(next++);
}

}  // namespace

PyExecutable CompileHlo(const std::string& text, const CompileArgs& args) {
  Client* client = ValueOrThrow(GetClient());
  DeviceRef device = ValueOrThrow(ResolveDevice(args.device));
  CompileOptions options;
  options.flags = args.flags;
  options.threads = args.threads;
  options.replica_count = args.replicas;
  options.num_partitions = args.partitions;
  if (!args.autotune.empty()) options.autotune.level = args.autotune;
  StatusOr<std::unique_ptr<Executable>> exe = Internal("not compiled");
  std::vector<std::optional<HloSharding>> argument_shardings, result_shardings;
  {
    nb::gil_scoped_release nogil;
    ParseModuleOptions po;
    const std::string filename = args.filename.empty() ? "<hlo>" : args.filename;
    StatusOr<std::unique_ptr<HloModule>> module = ParseModule(text, filename, po);
    // A shard_map program becomes its per-device program here, as the `kiln` tool's loading
    // does (the backends would lower it too): the parameters' and the root's shardings of the
    // lowered module say how run_global splits and joins.
    if (module.ok() && IsShardMapProgram(**module)) {
      Status s = LowerShardMap(**module).status();
      if (!s.ok()) module = InvalidArgument(filename, ": ", s.message());
    }
    if (!module.ok()) {
      exe = module.status();
    } else {
      options.verify = false;  // ParseModule verified it
      exe = client->Compile(**module, device.name, options);
      if (exe.ok()) {
        const HloComputation* entry = (*module)->entry_computation();
        argument_shardings.resize((*exe)->argument_shapes().size());
        for (int64_t p = 0; p < entry->num_parameters() && p < (*exe)->num_parameters(); ++p) {
          const HloInstruction* param = entry->parameter_instruction(p);
          if (param->shape().IsArray()) argument_shardings[(*exe)->first_leaf_of_parameter(p)] = param->sharding();
        }
        const HloInstruction* root = entry->root_instruction();
        const size_t leaves = (*exe)->result_shapes().size();
        if (root->sharding() && root->sharding()->kind == HloSharding::Kind::kTuple) {
          if (root->sharding()->tuple_elements.size() == leaves)
            for (const HloSharding& e : root->sharding()->tuple_elements) result_shardings.push_back(e);
        } else if (root->sharding()) {
          result_shardings.assign(leaves, root->sharding());
        }
      }
    }
  }
  std::unique_ptr<Executable> e = ValueOrThrow(std::move(exe));
  if (!e->can_execute()) throw StatusError(Unavailable("the module was compiled for ", device.name, " but cannot run there"));
  return PyExecutable(std::move(e), std::move(device), std::move(argument_shardings), std::move(result_shardings));
}

void PyExecutable::ImportArguments(nb::handle arguments, const std::string& context, std::vector<PyArray>& held,
                                   std::vector<Buffer*>& buffers, int& legacy_wait,
                                   std::vector<Buffer*>& donated_taken) {
  const std::vector<Shape>& shapes = exe_->argument_shapes();
  const size_t n = nb::len(arguments);
  if (n != shapes.size())
    throw StatusError(InvalidArgument(context, exe_->module_name(), " takes ", shapes.size(), " argument array",
                                      shapes.size() == 1 ? "" : "s", ", got ", n));
  buffers.assign(n, nullptr);
  size_t i = 0;
  for (nb::handle a : arguments) {
    const bool donated = exe_->donated()[i];
    if (nb::isinstance<PyArray>(a)) {
      PyArray& array = nb::cast<PyArray&>(a);
      ThrowIfError(array.CheckLive().WithContext(StrCat(context, "argument ", i, ": ")));
      const Buffer& b = array.buffer();
      if (b.platform() == device_.backend->name() && b.device_ordinal() == device_.ordinal &&
          (!donated || (array.owned() && !array.exported() &&
                        std::find(donated_taken.begin(), donated_taken.end(), &array.buffer()) == donated_taken.end()))) {
        buffers[i] = &array.buffer();
        if (donated) donated_taken.push_back(buffers[i]);
        ++i;
        continue;
      }
    }
    PyArray imported = [&] {
      try {
        return ImportArray(a, device_, shapes[i].element_type(), &legacy_wait);
      } catch (const StatusError& e) {
        if (context.empty()) throw;
        throw StatusError(e.status().WithContext(context));
      }
    }();
    if (donated && (!imported.owned() || imported.exported() ||
                    std::find(donated_taken.begin(), donated_taken.end(), &imported.buffer()) != donated_taken.end()))
      imported = ValueOrThrow(CopyArray(imported, device_));
    held.push_back(std::move(imported));
    buffers[i] = &held.back().buffer();
    if (donated) donated_taken.push_back(buffers[i]);
    ++i;
  }
}

KeepAlive PyExecutable::MergedKeep(nb::handle arguments, const std::vector<Buffer*>& buffers, KeepAlive keep) const {
  // Note [Results keep their executables]: this one, and those of the donated arguments.
  for (size_t k = 0; k < buffers.size(); ++k) {
    if (!exe_->donated()[k]) continue;
    nb::handle a = arguments[k];
    const KeepAlive* other = nullptr;
    if (nb::isinstance<PyArray>(a) && buffers[k] == &nb::cast<PyArray&>(a).buffer()) other = &nb::cast<PyArray&>(a).keep();
    if (other == nullptr || !*other || *other == keep) continue;
    auto merged = std::make_shared<std::vector<std::shared_ptr<const void>>>(*keep);
    for (const auto& e : **other)
      if (std::find(merged->begin(), merged->end(), e) == merged->end()) merged->push_back(e);
    if (merged->size() != keep->size()) keep = std::move(merged);
  }
  return keep;
}

nb::list PyExecutable::RunFlat(nb::handle arguments, uint64_t seed) {
  if (exe_->num_participants() > 1)
    throw StatusError(InvalidArgument(exe_->module_name(), " runs over ", exe_->num_participants(), " participants (",
                                      exe_->replica_count(), " replicas x ", exe_->num_partitions(),
                                      " partitions): run it with run_participants (one argument list per "
                                      "participant) or run_global (global arrays), or compile it with "
                                      "replicas=1, partitions=1 for one"));
  std::vector<PyArray> held;  // imported arrays and donation copies, alive until the run is over
  held.reserve(nb::len(arguments));
  std::vector<Buffer*> buffers;
  std::vector<Buffer*> donated_taken;
  int legacy_wait = -1;  // a CUDA device whose legacy default stream to wait for, once
  ImportArguments(arguments, "", held, buffers, legacy_wait, donated_taken);
  KeepAlive keep = MergedKeep(arguments, buffers, keep_);
  ExecuteOptions options;
  options.seed = seed;
  StatusOr<std::vector<std::unique_ptr<Buffer>>> results = Internal("not run");
  {
    nb::gil_scoped_release nogil;
    Status waited = legacy_wait >= 0 ? WaitForLegacyStream(legacy_wait) : OkStatus();
    results = waited.ok() ? exe_->Execute(buffers, options) : StatusOr<std::vector<std::unique_ptr<Buffer>>>(waited);
  }
  std::vector<std::unique_ptr<Buffer>> out = ValueOrThrow(std::move(results));
  nb::list list;
  for (std::unique_ptr<Buffer>& b : out) list.append(nb::cast(PyArray(std::shared_ptr<Buffer>(std::move(b)), true, keep)));
  return list;
}

namespace {

ExecuteOptions ParticipantsExecuteOptions(uint64_t seed, int64_t timeout_ms) {
  ExecuteOptions options;
  options.seed = seed;
  if (timeout_ms >= 0) options.collective_timeout_ms = timeout_ms;
  return options;
}

}  // namespace

nb::list PyExecutable::RunParticipantsFlat(nb::handle per_participant, uint64_t seed, int64_t timeout_ms) {
  const int64_t n = exe_->num_participants();
  if (nb::isinstance<nb::str>(per_participant) || !nb::hasattr(per_participant, "__len__"))
    throw StatusError(InvalidArgument("run_participants takes one argument list per participant (", n, ")"));
  const int64_t given = static_cast<int64_t>(nb::len(per_participant));
  if (given != n)
    throw StatusError(InvalidArgument(exe_->module_name(), " runs over ", n, " participant", n == 1 ? "" : "s", " (",
                                      exe_->replica_count(), " replicas x ", exe_->num_partitions(),
                                      " partitions), got ", given, " argument list", given == 1 ? "" : "s"));
  std::vector<nb::object> lists;
  for (nb::handle l : per_participant) {
    if (nb::isinstance<nb::str>(l) || !nb::hasattr(l, "__len__") || !nb::hasattr(l, "__getitem__"))
      throw StatusError(InvalidArgument("participant ", lists.size(), ": expected a list of ",
                                        exe_->argument_shapes().size(), " arrays, got ",
                                        nb::cast<std::string>(nb::str(l.type().attr("__name__")))));
    lists.push_back(nb::borrow(l));
  }
  std::vector<PyArray> held;
  std::vector<std::vector<Buffer*>> buffers(n);
  std::vector<Buffer*> donated_taken;
  int legacy_wait = -1;
  KeepAlive keep = keep_;
  for (int64_t i = 0; i < n; ++i) {
    ImportArguments(lists[i], StrCat("participant ", i, ": "), held, buffers[i], legacy_wait, donated_taken);
    keep = MergedKeep(lists[i], buffers[i], keep);
  }
  const ExecuteOptions options = ParticipantsExecuteOptions(seed, timeout_ms);
  StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>> results = Internal("not run");
  {
    nb::gil_scoped_release nogil;
    Status waited = legacy_wait >= 0 ? WaitForLegacyStream(legacy_wait) : OkStatus();
    results = waited.ok() ? exe_->ExecuteParticipants(buffers, options)
                          : StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>>(waited);
  }
  auto out = ValueOrThrow(std::move(results));
  nb::list all;
  for (auto& participant : out) {
    nb::list list;
    for (std::unique_ptr<Buffer>& b : participant)
      list.append(nb::cast(PyArray(std::shared_ptr<Buffer>(std::move(b)), true, keep)));
    all.append(list);
  }
  return all;
}

std::vector<std::optional<TilePlacement>> PyExecutable::JoinPlan() const {
  // How each result leaf joins: tiles placed into the global array (a tiled sharding),
  // participant 0's value (nullopt: replicated, maximal; or one participant).
  const int64_t n = exe_->num_participants();
  const std::vector<Shape>& result_shapes = exe_->result_shapes();
  std::vector<std::optional<TilePlacement>> join0(result_shapes.size());
  for (size_t j = 0; j < result_shapes.size() && n > 1; ++j) {
    const std::optional<HloSharding>& s = result_shardings_[j];
    if (s) join0[j] = ValueOrThrow(PlaceTile(*s, result_shapes[j].dimensions(), ShardingDevice(0)));
    if (!join0[j] && !(s && (s->kind == HloSharding::Kind::kReplicated || s->kind == HloSharding::Kind::kMaximal)))
      throw StatusError(InvalidArgument(
          exe_->module_name(), ": result ", j, " has ", s ? "a sharding that does not tile it" : "no sharding",
          ", so its ", n, " participants' values do not join into one global array; run it with run_participants"));
  }
  return join0;
}

nb::list PyExecutable::SplitGlobal(nb::handle arguments) {
  const int64_t n = exe_->num_participants();
  const std::vector<Shape>& shapes = exe_->argument_shapes();
  const size_t count = nb::len(arguments);
  if (count != shapes.size())
    throw StatusError(InvalidArgument(exe_->module_name(), " takes ", shapes.size(), " argument array",
                                      shapes.size() == 1 ? "" : "s", ", got ", count));
  // Participant i's arguments: the argument itself (every participant), or its tile of it.
  std::vector<nb::list> lists(n);
  for (size_t k = 0; k < count; ++k) {
    nb::handle a = arguments[k];
    const std::optional<HloSharding>& s = argument_shardings_[k];
    const std::vector<int64_t>& local = shapes[k].dimensions();
    std::optional<TilePlacement> first;
    if (s && shapes[k].IsArray()) first = ValueOrThrow(PlaceTile(*s, local, ShardingDevice(0)));
    if (!first || first->global_dims == local) {
      for (int64_t i = 0; i < n; ++i) lists[i].append(a);
      continue;
    }
    PyArray whole = [&] {
      try {
        return nb::isinstance<PyArray>(a) ? nb::cast<PyArray&>(a) : ImportArray(a, device_, shapes[k].element_type());
      } catch (const StatusError& e) {
        throw StatusError(e.status().WithContext(StrCat("argument ", k, ": ")));
      }
    }();
    ThrowIfError(whole.CheckLive().WithContext(StrCat("argument ", k, ": ")));
    const std::vector<int64_t>& dims = whole.buffer().shape().dimensions();
    if (dims == local) {  // a tile's shape: every participant's
      for (int64_t i = 0; i < n; ++i) lists[i].append(a);
      continue;
    }
    if (dims != first->global_dims)
      throw StatusError(InvalidArgument(
          "argument ", k, " of ", exe_->module_name(), " is ", whole.buffer().shape().ToString(false), "; parameter ", k,
          " takes the global ", Shape::Array(shapes[k].element_type(), first->global_dims).ToString(false),
          " (split into ", shapes[k].ToString(false), " tiles by its sharding) or one ",
          shapes[k].ToString(false), " for every participant"));
    std::vector<std::unique_ptr<Buffer>> tiles(n);
    Status split = OkStatus();
    {
      nb::gil_scoped_release nogil;
      StatusOr<Literal> global = whole.buffer().ToLiteral();
      split = global.status();
      for (int64_t i = 0; i < n && split.ok(); ++i) {
        StatusOr<std::optional<TilePlacement>> place = PlaceTile(*s, local, ShardingDevice(i));
        if (!place.ok()) {
          split = place.status();
          break;
        }
        StatusOr<std::unique_ptr<Buffer>> b = exe_->BufferFromLiteral(SplitTile(*global, **place, local));
        if (!b.ok()) {
          split = b.status();
          break;
        }
        tiles[i] = std::move(b).value();
      }
    }
    ThrowIfError(split.WithContext(StrCat("argument ", k, ": ")));
    for (int64_t i = 0; i < n; ++i) lists[i].append(nb::cast(PyArray(std::shared_ptr<Buffer>(std::move(tiles[i])), true)));
  }
  nb::list per_participant;
  for (nb::list& l : lists) per_participant.append(l);
  return per_participant;
}

nb::list PyExecutable::JoinGlobal(nb::handle results) {
  const int64_t n = exe_->num_participants();
  const std::vector<Shape>& result_shapes = exe_->result_shapes();
  const std::vector<std::optional<TilePlacement>> join0 = JoinPlan();
  if (static_cast<int64_t>(nb::len(results)) != n)
    throw StatusError(InvalidArgument(exe_->module_name(), " runs over ", n, " participants, got ", nb::len(results),
                                      " result lists"));
  std::vector<nb::list> per(n);
  for (int64_t i = 0; i < n; ++i) {
    per[i] = nb::list(results[i]);
    if (nb::len(per[i]) != result_shapes.size())
      throw StatusError(InvalidArgument("participant ", i, ": ", nb::len(per[i]), " results, ", exe_->module_name(),
                                        " returns ", result_shapes.size()));
  }
  nb::list out;
  for (size_t j = 0; j < result_shapes.size(); ++j) {
    if (!join0[j]) {  // one participant, replicated or maximal: participant 0's
      out.append(per[0][j]);
      continue;
    }
    std::vector<PyArray> leaves;
    for (int64_t i = 0; i < n; ++i) {
      PyArray leaf = ImportArray(per[i][j], device_, result_shapes[j].element_type());
      ThrowIfError(leaf.CheckLive().WithContext(StrCat("participant ", i, " result ", j, ": ")));
      if (leaf.buffer().shape().dimensions() != result_shapes[j].dimensions() ||
          leaf.buffer().shape().element_type() != result_shapes[j].element_type())
        throw StatusError(InvalidArgument("participant ", i, " result ", j, " is ",
                                          leaf.buffer().shape().ToString(false), ", expected ",
                                          result_shapes[j].ToString(false)));
      leaves.push_back(std::move(leaf));
    }
    StatusOr<std::unique_ptr<Buffer>> joined = Internal("not joined");
    {
      nb::gil_scoped_release nogil;
      joined = [&]() -> StatusOr<std::unique_ptr<Buffer>> {
        Literal global(Shape::Array(result_shapes[j].element_type(), join0[j]->global_dims));
        for (int64_t i = 0; i < n; ++i) {
          KILN_ASSIGN_OR_RETURN(Literal tile, leaves[i].buffer().ToLiteral());
          KILN_ASSIGN_OR_RETURN(auto place, PlaceTile(*result_shardings_[j], result_shapes[j].dimensions(),
                                                      ShardingDevice(i)));
          JoinTile(tile, *place, global);
        }
        return exe_->BufferFromLiteral(global);
      }();
    }
    if (!joined.ok()) throw StatusError(joined.status().WithContext(StrCat("result ", j, ": ")));
    out.append(nb::cast(PyArray(std::shared_ptr<Buffer>(std::move(joined).value()), true)));
  }
  return out;
}

nb::list PyExecutable::GlobalDims(bool results) const {
  const std::vector<Shape>& shapes = results ? exe_->result_shapes() : exe_->argument_shapes();
  const std::vector<std::optional<HloSharding>>& shardings = results ? result_shardings_ : argument_shardings_;
  nb::list out;
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<int64_t> dims = shapes[k].dimensions();
    if (shardings[k] && exe_->num_participants() > 1) {
      StatusOr<std::optional<TilePlacement>> place = PlaceTile(*shardings[k], dims, ShardingDevice(0));
      if (place.ok() && place->has_value()) dims = (*place)->global_dims;
    }
    nb::list l;
    for (int64_t d : dims) l.append(d);
    out.append(nb::tuple(l));
  }
  return out;
}

nb::list PyExecutable::RunGlobalFlat(nb::handle arguments, uint64_t seed, int64_t timeout_ms) {
  JoinPlan();  // a result that does not join fails before anything runs
  nb::list per_participant = SplitGlobal(arguments);
  nb::list results = RunParticipantsFlat(per_participant, seed, timeout_ms);
  return JoinGlobal(results);
}

void RegisterExecutable(nb::module_& m) {
  nb::class_<PyExecutable>(m, "Executable")
      .def("run_flat", &PyExecutable::RunFlat, nb::arg("arguments"), nb::arg("seed") = 0,
           "Runs on one array per argument leaf; returns one kiln.Array per result leaf.")
      .def("run_participants_flat", &PyExecutable::RunParticipantsFlat, nb::arg("arguments"), nb::arg("seed") = 0,
           nb::arg("timeout_ms") = -1,
           "Runs every participant at once on one list of argument leaves each; returns one list of result "
           "leaves per participant.")
      .def("run_global_flat", &PyExecutable::RunGlobalFlat, nb::arg("arguments"), nb::arg("seed") = 0,
           nb::arg("timeout_ms") = -1,
           "Runs every participant on global arrays split by the parameters' shardings; returns the result "
           "leaves joined by the root's sharding.")
      .def("split_global", &PyExecutable::SplitGlobal, nb::arg("arguments"),
           "The per-participant argument lists run_global_flat runs on.")
      .def("join_global", &PyExecutable::JoinGlobal, nb::arg("results"),
           "The global result leaves of per-participant result lists, as run_global_flat joins them.")
      .def_prop_ro("global_parameter_dims", [](const PyExecutable& e) { return e.GlobalDims(false); })
      .def_prop_ro("global_result_dims", [](const PyExecutable& e) { return e.GlobalDims(true); })
      .def_prop_ro("replica_count", [](const PyExecutable& e) { return e.exe().replica_count(); })
      .def_prop_ro("num_partitions", [](const PyExecutable& e) { return e.exe().num_partitions(); })
      .def_prop_ro("num_participants", [](const PyExecutable& e) { return e.exe().num_participants(); })
      .def_prop_ro("device", [](const PyExecutable& e) { return e.device().name; })
      .def_prop_ro("module_name", [](const PyExecutable& e) { return e.exe().module_name(); })
      .def_prop_ro("parameters",
                   [](const PyExecutable& e) {
                     nb::list l;
                     for (size_t i = 0; i < e.exe().argument_shapes().size(); ++i)
                       l.append(LeafInfo(e.exe().argument_shapes()[i], e.exe().donated()[i]));
                     return l;
                   })
      .def_prop_ro("results",
                   [](const PyExecutable& e) {
                     nb::list l;
                     for (const Shape& s : e.exe().result_shapes()) l.append(LeafInfo(s, false));
                     return l;
                   })
      .def_prop_ro("result_structure",
                   [](const PyExecutable& e) {
                     int64_t next = 0;
                     return Structure(e.exe().result_shape(), next);
                   })
      .def("memory_stats",
           [](const PyExecutable& e) {
             const MemoryStats& s = e.exe().memory_stats();
             nb::dict d;
             d["argument_bytes"] = s.argument_bytes;
             d["output_bytes"] = s.output_bytes;
             d["constant_bytes"] = s.constant_bytes;
             d["temp_bytes"] = s.temp_bytes;
             d["peak_bytes"] = s.peak_bytes;
             d["aliased_bytes"] = s.aliased_bytes;
             return d;
           })
      .def_prop_ro("runs_f32_products_in_tf32", [](const PyExecutable& e) { return e.exe().RunsF32ProductsInTf32(); })
      .def_prop_ro("compile_seconds", [](const PyExecutable& e) { return e.exe().compile_report().compile_seconds; })
      .def_prop_ro("summary", [](const PyExecutable& e) { return e.exe().compile_report().summary; })
      .def("run_report", [](const PyExecutable& e) { return e.exe().RunReport(); });

  m.def(
      "compile",
      [](const std::string& text, const std::string& device, const std::string& autotune, const std::string& filename,
         const std::map<std::string, std::string>& flags, int threads, int64_t replicas, int64_t partitions) {
        CompileArgs a;
        a.replicas = replicas;
        a.partitions = partitions;
        a.device = device;
        a.autotune = autotune;
        a.filename = filename;
        for (const auto& [k, v] : flags) a.flags[k] = v;
        a.threads = threads;
        return CompileHlo(text, a);
      },
      nb::arg("text"), nb::arg("device") = "", nb::arg("autotune") = "", nb::arg("filename") = "<hlo>",
      nb::arg("flags") = std::map<std::string, std::string>(), nb::arg("threads") = 0,
      nb::arg("replicas") = 0, nb::arg("partitions") = 0);
}

}  // namespace kiln::python
