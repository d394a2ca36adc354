// Status -> Python exception, at the binding edge only: everything below returns Status /
// StatusOr; the functions here turn a failed one into a StatusError, which the translator
// registered by RegisterErrorTranslator raises as the kiln.errors class of its code
// (python/kiln/errors.py: InvalidArgumentError is also a ValueError, UnimplementedError also a
// NotImplementedError, ...), the message exactly as the `kiln` tool prints it after "kiln: ".
#pragma once

#include <exception>
#include <string>
#include <utility>

#include <nanobind/nanobind.h>

#include "kiln/base/status.h"

namespace kiln::python {

class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return status_.message().c_str(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}

template <typename T>
T ValueOrThrow(StatusOr<T>&& s) {
  if (!s.ok()) throw StatusError(std::move(s).status());
  return std::move(s).value();
}

// Registers the translator and `_set_error_classes(dict)`: kiln/errors.py hands the classes
// over at import, keyed by StatusCodeName ("INVALID_ARGUMENT"); codes without a class of their
// own raise the "KilnError" entry.
void RegisterErrors(nanobind::module_& m);

}  // namespace kiln::python
