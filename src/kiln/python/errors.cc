#include "kiln/python/errors.h"

#include <string>

namespace nb = nanobind;

namespace kiln::python {
namespace {

// code name -> class; set once by kiln/errors.py at import. Kept alive for the process (the
// translator may run during interpreter shutdown).
nb::dict* error_classes = nullptr;

void RaiseStatus(const Status& status) {
  const std::string code(StatusCodeName(status.code()));
  nb::handle cls = PyExc_RuntimeError;
  if (error_classes != nullptr) {
    if (PyObject* c = PyDict_GetItemString(error_classes->ptr(), code.c_str())) {
      cls = c;
    } else if (PyObject* base = PyDict_GetItemString(error_classes->ptr(), "KilnError")) {
      cls = base;
    }
  }
  PyErr_SetString(cls.ptr(), status.message().c_str());
}

}  // namespace

void RegisterErrors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      RaiseStatus(e.status());
    }
  });
  m.def("_set_error_classes", [](nb::dict classes) {
    if (error_classes == nullptr) error_classes = new nb::dict();
    *error_classes = classes;
  });
}

}  // namespace kiln::python
