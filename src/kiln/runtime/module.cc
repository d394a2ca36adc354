#include "kiln/runtime/module.h"

#include <utility>

namespace kiln::runtime {

ModuleSpec ModuleSpec::FromCubin(std::string cubin, std::string name) {
  ModuleSpec spec;
  spec.format = Format::kCubin;
  spec.image = std::move(cubin);
  spec.name = std::move(name);
  return spec;
}

ModuleSpec ModuleSpec::FromPtx(std::string ptx, std::string name) {
  ModuleSpec spec;
  spec.format = Format::kPtx;
  spec.image = std::move(ptx);
  spec.name = std::move(name);
  return spec;
}

ModuleSpec ModuleSpec::FromHsaco(std::string code_object, std::string name) {
  ModuleSpec spec;
  spec.format = Format::kHsaco;
  spec.image = std::move(code_object);
  spec.name = std::move(name);
  return spec;
}

ModuleSpec ModuleSpec::FromHostLibrary(std::shared_ptr<const HostKernelLibrary> library,
                                       std::string name) {
  ModuleSpec spec;
  spec.format = Format::kHostLibrary;
  spec.host_library = std::move(library);
  spec.name = std::move(name);
  return spec;
}

const char* ModuleFormatName(ModuleSpec::Format format) {
  switch (format) {
    case ModuleSpec::Format::kCubin: return "cubin";
    case ModuleSpec::Format::kPtx: return "ptx";
    case ModuleSpec::Format::kHostLibrary: return "host library";
    case ModuleSpec::Format::kHsaco: return "hsaco";
  }
  return "?";
}

}  // namespace kiln::runtime
