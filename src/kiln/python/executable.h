// kiln.compile's Executable in the binding: a compiled module on one device, run on arrays.
//
// run_flat(arguments) takes one array per argument leaf (anything ImportArray takes) and
// returns one kiln.Array per result leaf; the Python layer (kiln/_executable.py) nests them.
// Donated leaves consume owned Arrays and copies of everything else (array.h). The GIL is
// released while compiling and while running.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "kiln/backend/executable.h"
#include "kiln/python/array.h"
#include "kiln/python/client.h"

namespace kiln::python {

struct CompileArgs {
  std::string device;       // "" = the best device present
  std::string autotune;     // "" = the backend's default; off | on | exhaustive
  std::string filename;     // names the text in parse errors
  BackendFlags flags;       // CompileOptions::flags
  int threads = 0;          // CompileOptions::threads
};

class PyExecutable {
 public:
  PyExecutable(std::unique_ptr<Executable> exe, DeviceRef device)
      : exe_(std::move(exe)),
        device_(std::move(device)),
        keep_(std::make_shared<const std::vector<std::shared_ptr<const void>>>(
            std::vector<std::shared_ptr<const void>>{exe_})) {}
  const Executable& exe() const { return *exe_; }
  const DeviceRef& device() const { return device_; }
  nanobind::list RunFlat(nanobind::handle arguments, uint64_t seed);

 private:
  std::shared_ptr<Executable> exe_;
  DeviceRef device_;
  KeepAlive keep_;  // {exe_}: what its results hold (Note [Results keep their executables])
};

PyExecutable CompileHlo(const std::string& text, const CompileArgs& args);

void RegisterExecutable(nanobind::module_& m);

}  // namespace kiln::python
