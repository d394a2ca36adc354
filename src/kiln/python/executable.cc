#include "kiln/python/executable.h"

#include <algorithm>

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "kiln/base/strings.h"
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
  if (!args.autotune.empty()) options.autotune.level = args.autotune;
  StatusOr<std::unique_ptr<Executable>> exe = Internal("not compiled");
  {
    nb::gil_scoped_release nogil;
    ParseModuleOptions po;
    StatusOr<std::unique_ptr<HloModule>> module = ParseModule(text, args.filename.empty() ? "<hlo>" : args.filename, po);
    if (!module.ok()) {
      exe = module.status();
    } else {
      options.verify = false;  // ParseModule verified it
      exe = client->Compile(**module, device.name, options);
    }
  }
  std::unique_ptr<Executable> e = ValueOrThrow(std::move(exe));
  if (!e->can_execute()) throw StatusError(Unavailable("the module was compiled for ", device.name, " but cannot run there"));
  return PyExecutable(std::move(e), std::move(device));
}

nb::list PyExecutable::RunFlat(nb::handle arguments, uint64_t seed) {
  const std::vector<Shape>& shapes = exe_->argument_shapes();
  const size_t n = nb::len(arguments);
  if (n != shapes.size())
    throw StatusError(InvalidArgument(exe_->module_name(), " takes ", shapes.size(), " argument array",
                                      shapes.size() == 1 ? "" : "s", ", got ", n));
  std::vector<PyArray> held;  // imported arrays and donation copies, alive until the run is over
  held.reserve(n);
  std::vector<Buffer*> buffers(n, nullptr);
  int legacy_wait = -1;  // a CUDA device whose legacy default stream to wait for, once
  size_t i = 0;
  for (nb::handle a : arguments) {
    const bool donated = exe_->donated()[i];
    if (nb::isinstance<PyArray>(a)) {
      PyArray& array = nb::cast<PyArray&>(a);
      ThrowIfError(array.CheckLive().WithContext(StrCat("argument ", i, ": ")));
      const Buffer& b = array.buffer();
      if (b.platform() == device_.backend->name() && b.device_ordinal() == device_.ordinal &&
          (!donated || (array.owned() && !array.exported()))) {
        buffers[i] = &array.buffer();
        ++i;
        continue;
      }
    }
    PyArray imported = ImportArray(a, device_, shapes[i].element_type(), &legacy_wait);
    if (donated && (!imported.owned() || imported.exported())) imported = ValueOrThrow(CopyArray(imported, device_));
    held.push_back(std::move(imported));
    buffers[i] = &held.back().buffer();
    ++i;
  }
  // Note [Results keep their executables]: this one, and those of the donated arguments.
  KeepAlive keep = keep_;
  for (size_t k = 0; k < n; ++k) {
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

void RegisterExecutable(nb::module_& m) {
  nb::class_<PyExecutable>(m, "Executable")
      .def("run_flat", &PyExecutable::RunFlat, nb::arg("arguments"), nb::arg("seed") = 0,
           "Runs on one array per argument leaf; returns one kiln.Array per result leaf.")
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
         const std::map<std::string, std::string>& flags, int threads) {
        CompileArgs a;
        a.device = device;
        a.autotune = autotune;
        a.filename = filename;
        for (const auto& [k, v] : flags) a.flags[k] = v;
        a.threads = threads;
        return CompileHlo(text, a);
      },
      nb::arg("text"), nb::arg("device") = "", nb::arg("autotune") = "", nb::arg("filename") = "<hlo>",
      nb::arg("flags") = std::map<std::string, std::string>(), nb::arg("threads") = 0);
}

}  // namespace kiln::python
