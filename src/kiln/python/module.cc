// kiln._kiln: the nanobind extension under the kiln Python package (python/kiln). The package
// is the interface; this module is its engine: arrays (array.h), compiling and running
// (executable.h), devices, errors (errors.h). See docs/python.md.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "kiln/base/strings.h"
#include "kiln/python/array.h"
#include "kiln/python/client.h"
#include "kiln/python/errors.h"
#include "kiln/python/executable.h"

namespace nb = nanobind;

namespace kiln::python {
void RegisterTesting(nb::module_& m);
}

NB_MODULE(_kiln, m) {
  using namespace kiln;
  using namespace kiln::python;
  m.doc() = "kiln's compiler and runtime (the engine of the kiln package)";
  RegisterErrors(m);
  RegisterArray(m);
  RegisterExecutable(m);
  RegisterTesting(m);

  m.def(
      "platforms",
      [] {
        Client* client = ValueOrThrow(GetClient());
        nb::list out;
        for (const PlatformInfo& p : client->Platforms()) {
          nb::list devices;
          for (const DeviceInfo& d : p.devices)
            devices.append(nb::make_tuple(StrCat(p.name, ":", d.ordinal), d.ordinal, d.name, d.description));
          out.append(nb::make_tuple(p.name, p.description, p.built, p.status.ok() ? std::string() : p.status.message(),
                                    devices));
        }
        return out;
      },
      "(name, description, built, why no devices, [(device, ordinal, name, description)]) per platform.");
  m.def(
      "resolve_device",
      [](const std::string& name) { return ValueOrThrow(ResolveDevice(name)).name; }, nb::arg("name"),
      "The canonical name (\"cuda:0\") of a device name; \"\" is the best device present.");
}
