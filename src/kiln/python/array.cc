#include "kiln/python/array.h"

#include <cstring>
#include <utility>

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "kiln/base/strings.h"
#include "kiln/python/cuda_sync.h"
#include "kiln/python/dlpack.h"
#include "kiln/python/dtypes.h"
#include "kiln/python/errors.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

// Set by kiln/_arrays.py at import (see array.h): coerce(obj, hlo_type or None) -> a numpy
// array, or a (uint numpy array, hlo type name) pair holding raw bits of an ml_dtypes type; and
// hlo type name -> numpy dtype.
nb::object* coerce_hook = nullptr;
nb::dict* numpy_dtypes = nullptr;

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// --- in ---------------------------------------------------------------------------------------

// A producer's tensor that kiln now owns (the capsule was renamed "used_..."); Release calls
// its deleter once.
struct ImportedTensor {
  DLTensor* tensor = nullptr;
  DLManagedTensor* legacy = nullptr;
  DLManagedTensorVersioned* versioned = nullptr;
  bool read_only = false;

  void Release() {
    if (legacy != nullptr && legacy->deleter != nullptr) legacy->deleter(legacy);
    if (versioned != nullptr && versioned->deleter != nullptr) versioned->deleter(versioned);
    legacy = nullptr;
    versioned = nullptr;
  }
};

// Calls the deleter with the GIL held (numpy's takes Python references); skipped at interpreter
// shutdown, when the producer's objects are gone anyway.
std::function<void()> ReleaseWithGil(ImportedTensor t) {
  return [t]() mutable {
    if (!Py_IsInitialized() || Finalizing()) return;
    nb::gil_scoped_acquire gil;
    t.Release();
  };
}

ImportedTensor TakeCapsule(nb::handle capsule) {
  ImportedTensor t;
  PyObject* c = capsule.ptr();
  if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (m->version.major > kDlpackMajorVersion)
      throw StatusError(InvalidArgument("DLPack version ", m->version.major, ".", m->version.minor,
                                        " is newer than kiln's (", kDlpackMajorVersion, ".", kDlpackMinorVersion, ")"));
    PyCapsule_SetName(c, "used_dltensor_versioned");
    t.versioned = m;
    t.tensor = &m->dl_tensor;
    t.read_only = (m->flags & kDLFlagBitmaskReadOnly) != 0;
  } else if (PyCapsule_IsValid(c, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
    PyCapsule_SetName(c, "used_dltensor");
    t.legacy = m;
    t.tensor = &m->dl_tensor;
  } else {
    throw StatusError(InvalidArgument("__dlpack__ returned something that is not an unused DLPack capsule"));
  }
  return t;
}

// Whether the strides (in elements) are compact row-major; null strides are.
bool IsCompactRowMajor(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] == 0) return true;
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// Copies a strided host tensor into compact row-major `dst`.
void GatherStrided(const DLTensor& t, int64_t elem_bytes, uint8_t* dst) {
  const auto* base = static_cast<const uint8_t*>(t.data) + t.byte_offset;
  int64_t count = 1;
  for (int d = 0; d < t.ndim; ++d) count *= t.shape[d];
  std::vector<int64_t> index(t.ndim, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (int d = 0; d < t.ndim; ++d) offset += index[d] * t.strides[d];
    std::memcpy(dst + i * elem_bytes, base + offset * elem_bytes, elem_bytes);
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
}

PyArray Wrap(StatusOr<std::unique_ptr<Buffer>> made, bool owned) {
  std::unique_ptr<Buffer> b = ValueOrThrow(std::move(made));
  return PyArray(std::shared_ptr<Buffer>(std::move(b)), owned);
}

constexpr int kLegacyDefaultStream = 1;  // the array API's value for CUDA's legacy default stream

// The `stream` argument kiln passes to a producer's __dlpack__ (Note [Streams across DLPack]):
// 1, CUDA's legacy default stream, for a producer whose memory is on a CUDA device; None (the
// only value host producers take) for the rest. numpy arrays, the common host case, are known
// by their type, without asking __dlpack_device__.
nb::object StreamFor(nb::handle obj) {
  if (std::strcmp(Py_TYPE(obj.ptr())->tp_name, "numpy.ndarray") == 0) return nb::none();
  if (!nb::hasattr(obj, "__dlpack_device__")) return nb::none();
  nb::object d = obj.attr("__dlpack_device__")();
  const int device_type = nb::cast<int>(nb::cast<nb::tuple>(d)[0]);
  if (device_type == kDLCUDA || device_type == kDLCUDAManaged) return nb::int_(kLegacyDefaultStream);
  return nb::none();
}

nb::object CallDlpack(nb::handle obj, nb::handle stream) {
  nb::object fn = obj.attr("__dlpack__");
  try {
    return fn(nb::arg("stream") = stream, nb::arg("max_version") = nb::make_tuple(1, 0));
  } catch (nb::python_error& e) {
    // Producers from before DLPack 1.0 take no max_version.
    if (!e.matches(PyExc_TypeError)) throw;
  }
  return fn(nb::arg("stream") = stream);
}

PyArray FromTensor(ImportedTensor t, const DeviceRef& device, std::optional<PrimitiveType> raw_type) {
  const DLTensor& dl = *t.tensor;
  PrimitiveType type;
  if (raw_type) {
    if (dl.dtype.code != kDLUInt || dl.dtype.bits != 8 * PrimitiveByteWidth(*raw_type) || dl.dtype.lanes != 1) {
      t.Release();
      throw StatusError(Internal("raw bits of ", PrimitiveTypeName(*raw_type), " must come as unsigned integers of its width"));
    }
    type = *raw_type;
  } else {
    StatusOr<PrimitiveType> pt = PrimitiveTypeOfDlpack(dl.dtype);
    if (!pt.ok()) {
      t.Release();
      throw StatusError(pt.status());
    }
    type = *pt;
  }
  std::vector<int64_t> dims(dl.shape, dl.shape + dl.ndim);
  Shape shape = Shape::ArrayWithDefaultLayout(type, dims);
  const int64_t elem = PrimitiveByteWidth(type);
  StatusOr<uint64_t> bytes_or = BufferBytes(shape);
  if (!bytes_or.ok()) {
    t.Release();
    throw StatusError(bytes_or.status());
  }
  const uint64_t bytes = *bytes_or;
  auto* data = static_cast<uint8_t*>(dl.data) + dl.byte_offset;
  const bool compact = IsCompactRowMajor(dl);
  const bool host_memory = dl.device.device_type == kDLCPU || dl.device.device_type == kDLCUDAHost;

  if (dl.device.device_type == kDLCUDA || dl.device.device_type == kDLCUDAManaged) {
    if (!device.is_cuda() || dl.device.device_id != device.ordinal) {
      t.Release();
      throw StatusError(InvalidArgument("the array is on cuda:", dl.device.device_id, ", the computation on ",
                                        device.name, "; move it there first"));
    }
    if (!compact) {
      t.Release();
      throw StatusError(InvalidArgument("a strided device array cannot be passed without a copy; make it contiguous first"));
    }
    if (bytes == 0) {
      t.Release();
      static const uint8_t dummy = 0;
      return Wrap(device.backend->BufferFromHost(&dummy, 0, shape, device.ordinal), /*owned=*/true);
    }
    return Wrap(device.backend->BufferFromPointer(data, shape, device.ordinal, ReleaseWithGil(t)), /*owned=*/false);
  }
  if (!host_memory) {
    t.Release();
    throw StatusError(InvalidArgument("arrays on DLPack device type ", dl.device.device_type, " are not supported"));
  }
  const bool aligned = reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(elem) == 0;
  if (device.is_host() && compact && aligned && bytes > 0) {
    return Wrap(device.backend->BufferFromPointer(data, shape, device.ordinal, ReleaseWithGil(t)), /*owned=*/false);
  }
  // A copy: onto the GPU, or into compact aligned host memory.
  std::vector<uint8_t> staging;
  const uint8_t* src = data;
  if (!compact) {
    staging.resize(bytes);
    GatherStrided(dl, elem, staging.data());
    src = staging.data();
  }
  static const uint8_t dummy = 0;
  StatusOr<std::unique_ptr<Buffer>> made = [&] {
    nb::gil_scoped_release nogil;
    return device.backend->BufferFromHost(bytes == 0 ? &dummy : src, bytes, shape, device.ordinal);
  }();
  t.Release();
  return Wrap(std::move(made), /*owned=*/true);
}

// --- out --------------------------------------------------------------------------------------

// What an exported tensor keeps alive: the memory (counted as an export), its shape and strides.
// One live export of an Array's memory: keeps the memory alive and counts itself in the
// Array's exports while it lives.
struct ExportView {
  KeepAlive keep;  // declared first: released after the memory (Note [Results keep their executables])
  std::shared_ptr<void> memory;
  std::shared_ptr<std::atomic<int>> exports;
  explicit ExportView(const PyArray& a) : keep(a.keep()), memory(a.buffer().memory_owner()), exports(a.exports()) {
    ++*exports;
  }
  ~ExportView() { --*exports; }
  ExportView(const ExportView&) = delete;
  ExportView& operator=(const ExportView&) = delete;
};

struct ExportContext {
  explicit ExportContext(const PyArray& a) : view(a) {}
  ExportView view;
  std::vector<int64_t> shape, strides;
  DLManagedTensor legacy{};
  DLManagedTensorVersioned versioned{};
};

// Row-major strides in elements, or those of the buffer's own layout when it has another.
std::vector<int64_t> StridesOf(const Shape& shape) {
  const int64_t rank = shape.rank();
  std::vector<int64_t> strides(rank, 1);
  std::vector<int64_t> minor_to_major;
  if (shape.has_layout() && static_cast<int64_t>(shape.layout().minor_to_major().size()) == rank) {
    minor_to_major = shape.layout().minor_to_major();
  } else {
    for (int64_t d = rank - 1; d >= 0; --d) minor_to_major.push_back(d);
  }
  int64_t stride = 1;
  for (int64_t d : minor_to_major) {
    strides[d] = stride;
    stride *= shape.dimensions(d);
  }
  return strides;
}

DLDevice DlDeviceOf(const Buffer& b) {
  if (b.on_host()) return {kDLCPU, 0};
  if (b.platform() == "cuda") return {kDLCUDA, b.device_ordinal()};
  return {kDLROCM, b.device_ordinal()};
}

void FillTensor(DLTensor& t, ExportContext& ctx, const Buffer& b, DLDataType type) {
  t.data = b.opaque_pointer();
  t.device = DlDeviceOf(b);
  t.ndim = static_cast<int32_t>(ctx.shape.size());
  t.dtype = type;
  t.shape = ctx.shape.data();
  t.strides = ctx.strides.data();
  t.byte_offset = 0;
}

ExportContext* NewExport(const PyArray& a) {
  auto* ctx = new ExportContext(a);
  ctx->shape = a.buffer().shape().dimensions();
  ctx->strides = StridesOf(a.buffer().shape());
  return ctx;
}

nb::object ExportCapsule(const PyArray& a, DLDataType type, bool versioned, bool copied) {
  ExportContext* ctx = NewExport(a);
  if (versioned) {
    DLManagedTensorVersioned& m = ctx->versioned;
    m.version = {kDlpackMajorVersion, kDlpackMinorVersion};
    m.manager_ctx = ctx;
    m.deleter = [](DLManagedTensorVersioned* self) { delete static_cast<ExportContext*>(self->manager_ctx); };
    m.flags = copied ? kDLFlagBitmaskIsCopied : 0;
    FillTensor(m.dl_tensor, *ctx, a.buffer(), type);
    PyObject* cap = PyCapsule_New(&m, "dltensor_versioned", [](PyObject* c) {
      if (PyCapsule_IsValid(c, "dltensor_versioned")) {  // never consumed
        auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
        m->deleter(m);
      }
    });
    if (cap == nullptr) {
      delete ctx;
      throw nb::python_error();
    }
    return nb::steal(cap);
  }
  DLManagedTensor& m = ctx->legacy;
  m.manager_ctx = ctx;
  m.deleter = [](DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); };
  FillTensor(m.dl_tensor, *ctx, a.buffer(), type);
  PyObject* cap = PyCapsule_New(&m, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (cap == nullptr) {
    delete ctx;
    throw nb::python_error();
  }
  return nb::steal(cap);
}

[[noreturn]] void ThrowBufferError(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw nb::python_error();
}

nb::object NumpyDtype(PrimitiveType t) {
  if (numpy_dtypes != nullptr) {
    if (PyObject* d = PyDict_GetItemString(numpy_dtypes->ptr(), std::string(PrimitiveTypeName(t)).c_str()))
      return nb::borrow(d);
  }
  throw StatusError(Unimplemented("no numpy dtype for ", PrimitiveTypeName(t), " (is ml_dtypes installed?)"));
}

std::string ArrayRepr(const PyArray& a) {
  const Buffer& b = a.buffer();
  return StrCat("kiln.Array(", b.shape().ToString(false), ", device=", b.device_name(),
                b.is_deleted() ? ", deleted" : "", ")");
}

}  // namespace

Status PyArray::CheckLive() const {
  if (buffer_->is_deleted())
    return FailedPrecondition("the array was ", buffer_->deleted_reason().empty() ? "deleted" : buffer_->deleted_reason());
  return OkStatus();
}

nb::object PyArray::Dlpack(nb::handle stream, nb::handle max_version, nb::handle dl_device, nb::handle copy) {
  (void)stream;  // Note [Streams across DLPack]: kiln's arrays are ready on every stream
  if (Status s = CheckLive(); !s.ok()) ThrowBufferError(s.message());
  const DLDevice own = DlDeviceOf(*buffer_);
  // The array API's copy: True always copies, False never (a BufferError where one is needed),
  // None where needed only.
  const bool copy_given = !copy.is_none();
  const bool must_copy = copy_given && nb::cast<bool>(copy);
  const bool must_not_copy = copy_given && !must_copy;
  // dl_device: the consumer's device. The host (numpy's from_dlpack(x, device="cpu")) gets a host
  // copy of a device array; other devices are refused.
  bool to_host = false;
  if (!dl_device.is_none()) {
    nb::tuple d = nb::cast<nb::tuple>(dl_device);
    const int type = nb::cast<int>(d[0]), id = nb::cast<int>(d[1]);
    if (type != own.device_type || id != own.device_id) {
      if (type != kDLCPU || buffer_->on_host())
        ThrowBufferError(StrCat("kiln.Array on ", buffer_->device_name(), " cannot be exported to DLPack device (",
                                type, ", ", id, ")"));
      if (must_not_copy)
        ThrowBufferError(StrCat("kiln.Array on ", buffer_->device_name(), " needs a copy to reach the host (copy=False)"));
      to_host = true;
    }
  }
  bool versioned = false;
  if (!max_version.is_none()) versioned = nb::cast<int>(nb::cast<nb::tuple>(max_version)[0]) >= 1;
  StatusOr<DLDataType> type = DlpackTypeOf(buffer_->shape().element_type());
  if (!type.ok()) ThrowBufferError(type.status().message());
  if (to_host || (must_copy && buffer_->on_host())) {
    // A fresh host buffer with the same bytes (and layout).
    StatusOr<std::unique_ptr<HostBuffer>> c = Internal("not copied");
    if (buffer_->on_host()) {
      c = HostBuffer::Copy(buffer_->opaque_pointer(), buffer_->size_bytes(), buffer_->shape(), buffer_->platform(),
                           buffer_->device_ordinal());
    } else {
      std::vector<uint8_t> host(buffer_->size_bytes());
      Status s;
      {
        nb::gil_scoped_release nogil;
        s = buffer_->CopyToHost(host.data(), host.size());
      }
      ThrowIfError(s);
      static const uint8_t dummy = 0;
      c = HostBuffer::Copy(host.empty() ? &dummy : host.data(), host.size(), buffer_->shape(), "cpu", 0);
    }
    PyArray fresh(std::shared_ptr<Buffer>(ValueOrThrow(std::move(c))), true);
    return ExportCapsule(fresh, *type, versioned, /*copied=*/true);
  }
  if (must_copy) {
    // A fresh buffer on the same device.
    DeviceRef device = ValueOrThrow(ResolveDevice(buffer_->device_name()));
    PyArray fresh = ValueOrThrow(CopyArray(*this, device));
    return ExportCapsule(fresh, *type, versioned, /*copied=*/true);
  }
  return ExportCapsule(*this, *type, versioned, /*copied=*/false);
}

nb::tuple PyArray::DlpackDevice() const {
  const DLDevice d = DlDeviceOf(*buffer_);
  return nb::make_tuple(d.device_type, d.device_id);
}

nb::object PyArray::Numpy() {
  ThrowIfError(CheckLive());
  const Buffer& b = *buffer_;
  const PrimitiveType t = b.shape().element_type();
  nb::object dtype = NumpyDtype(t);
  // kiln keeps a signed sub-byte integer sign-extended in its byte, ml_dtypes keeps the low bits
  // only: those convert (a copy); everything else is a view of the same bytes.
  const bool sign_extended = IsSubByteType(t) && IsSignedIntegralType(t);
  // numpy's own types travel as themselves, ml_dtypes' as unsigned bytes viewed as their type.
  StatusOr<DLDataType> native = DlpackTypeOf(t);
  const bool numpy_native = native.ok() && (native->code == kDLInt || native->code == kDLUInt ||
                                            native->code == kDLFloat || native->code == kDLComplex ||
                                            native->code == kDLBool);
  DLDataType raw = numpy_native ? *native : RawDlpackTypeOf(t);
  if (sign_extended) raw.code = kDLInt;
  const nb::dlpack::dtype nb_raw{raw.code, raw.bits, raw.lanes};
  std::vector<size_t> dims(b.shape().dimensions().begin(), b.shape().dimensions().end());
  nb::object array;
  if (b.on_host()) {
    // A read-only view; the capsule keeps the memory (counted as an export).
    auto* keep = new ExportView(*this);
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<ExportView*>(p); });
    std::vector<int64_t> strides = StridesOf(b.shape());
    array = nb::ndarray<nb::numpy, nb::ro>(b.opaque_pointer(), dims.size(), dims.data(), owner, strides.data(), nb_raw)
                .cast();
  } else {
    auto* host = new std::vector<uint8_t>(b.size_bytes());
    nb::capsule owner(host, [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
    Status s;
    {
      nb::gil_scoped_release nogil;
      s = b.CopyToHost(host->data(), host->size());
    }
    ThrowIfError(s);
    array = nb::ndarray<nb::numpy>(host->data(), dims.size(), dims.data(), owner, nullptr, nb_raw).cast();
  }
  if (numpy_native) return array;
  return sign_extended ? array.attr("astype")(dtype) : array.attr("view")(dtype);
}

StatusOr<PrimitiveType> ParseElementType(std::string_view name) {
  std::optional<PrimitiveType> t = ParsePrimitiveType(name);
  if (!t || !IsArrayType(*t)) return InvalidArgument("unknown element type '", name, "'");
  return *t;
}

namespace {

// Note [Streams across DLPack]: the wait for a CUDA producer's array, now or deferred.
void WaitOrDefer(ImportedTensor& t, int* deferred_wait) {
  const int32_t device_type = t.tensor->device.device_type;
  if (device_type != kDLCUDA && device_type != kDLCUDAManaged) return;
  if (deferred_wait != nullptr) {
    *deferred_wait = t.tensor->device.device_id;
    return;
  }
  Status s = WaitForLegacyStream(t.tensor->device.device_id);
  if (!s.ok()) {
    t.Release();
    throw StatusError(s);
  }
}

}  // namespace

PyArray ImportArray(nb::handle obj, const DeviceRef& device, std::optional<PrimitiveType> type, int* deferred_wait) {
  if (nb::isinstance<PyArray>(obj)) {
    PyArray& a = nb::cast<PyArray&>(obj);
    ThrowIfError(a.CheckLive());
    if (a.buffer().platform() == device.backend->name() && a.buffer().device_ordinal() == device.ordinal) return a;
    if (!a.buffer().on_host() && !device.is_host()) {
      throw StatusError(InvalidArgument("the array is on ", a.buffer().device_name(), ", the computation on ",
                                        device.name, "; move it there first"));
    }
    // Another device: through the host.
    std::vector<uint8_t> host(a.buffer().size_bytes());
    Status s;
    StatusOr<std::unique_ptr<Buffer>> made = Internal("not copied");
    {
      nb::gil_scoped_release nogil;
      s = a.buffer().CopyToHost(host.data(), host.size());
      if (s.ok()) {
        static const uint8_t dummy = 0;
        made = device.backend->BufferFromHost(host.empty() ? &dummy : host.data(), host.size(), a.buffer().shape(),
                                              device.ordinal);
      }
    }
    ThrowIfError(s);
    return Wrap(std::move(made), /*owned=*/true);
  }
  if (PyCapsule_CheckExact(obj.ptr())) {
    // A capsule already made (kiln/_jit.py makes jax's itself, skipping jax's Python
    // __dlpack__): host-ready or made on the legacy default stream, like __dlpack__'s.
    ImportedTensor t = TakeCapsule(obj);
    WaitOrDefer(t, deferred_wait);
    return FromTensor(t, device, std::nullopt);
  }
  nb::object source = nb::borrow(obj);
  std::optional<PrimitiveType> raw_type;
  bool exportable = nb::hasattr(source, "__dlpack__");
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!exportable) {
      if (coerce_hook == nullptr) throw StatusError(Internal("kiln's Python hooks are not installed"));
      nb::object type_name = type ? nb::cast(std::string(PrimitiveTypeName(*type))) : nb::none();
      nb::object c = (*coerce_hook)(source, type_name);
      if (nb::isinstance<nb::tuple>(c)) {
        nb::tuple pair = nb::cast<nb::tuple>(c);
        source = pair[0];
        ThrowIfError(ParseElementType(nb::cast<std::string>(pair[1])).status());
        raw_type = *ParseElementType(nb::cast<std::string>(pair[1]));
      } else {
        source = c;
      }
    }
    nb::object capsule;
    try {
      // Note [Streams across DLPack]: stream=1 (the legacy default stream) for a CUDA producer,
      // None for a host one.
      capsule = CallDlpack(source, StreamFor(source));
    } catch (nb::python_error& e) {
      // numpy cannot export ml_dtypes arrays (nor, before DLPack 1.0, read-only ones): the
      // coerce hook hands over their raw bits instead.
      if (attempt == 0 && exportable && (e.matches(PyExc_BufferError) || e.matches(PyExc_TypeError) ||
                                         e.matches(PyExc_ValueError) || e.matches(PyExc_RuntimeError))) {
        exportable = false;
        continue;
      }
      throw;
    }
    ImportedTensor t = TakeCapsule(capsule);
    WaitOrDefer(t, deferred_wait);
    return FromTensor(t, device, raw_type);
  }
  throw StatusError(Internal("unreachable"));
}

StatusOr<PyArray> CopyArray(const PyArray& array, const DeviceRef& device) {
  KILN_RETURN_IF_ERROR(array.CheckLive());
  const Buffer& b = array.buffer();
  static const uint8_t dummy = 0;
  if (b.on_host()) {
    const void* src = b.size_bytes() == 0 ? &dummy : b.opaque_pointer();
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> c, device.backend->BufferFromHost(src, b.size_bytes(), b.shape(), device.ordinal));
    return PyArray(std::shared_ptr<Buffer>(std::move(c)), true);
  }
  // Device memory: through the host (the public API has no device-to-device copy).
  std::vector<uint8_t> host(b.size_bytes());
  KILN_RETURN_IF_ERROR(b.CopyToHost(host.data(), host.size()));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> c,
                        device.backend->BufferFromHost(host.empty() ? &dummy : host.data(), host.size(), b.shape(), device.ordinal));
  return PyArray(std::shared_ptr<Buffer>(std::move(c)), true);
}

void RegisterArray(nb::module_& m) {
  nb::class_<PyArray>(m, "Array",
                      "An array on a kiln device: a result of a run, or an array passed in. Exchanged through "
                      "DLPack (__dlpack__, __dlpack_device__) and numpy (numpy(), __array__).")
      .def_prop_ro("shape",
                   [](const PyArray& a) {
                     const auto& d = a.buffer().shape().dimensions();
                     nb::list l;
                     for (int64_t x : d) l.append(x);
                     return nb::tuple(l);
                   })
      .def_prop_ro("ndim", [](const PyArray& a) { return a.buffer().shape().rank(); })
      .def_prop_ro("size", [](const PyArray& a) { return a.buffer().shape().num_elements(); })
      .def_prop_ro("nbytes", [](const PyArray& a) { return a.buffer().size_bytes(); })
      .def_prop_ro("hlo_type", [](const PyArray& a) { return std::string(PrimitiveTypeName(a.buffer().shape().element_type())); })
      .def_prop_ro("dtype", [](const PyArray& a) { return NumpyDtype(a.buffer().shape().element_type()); })
      .def_prop_ro("device", [](const PyArray& a) { return a.buffer().device_name(); })
      .def_prop_ro("is_deleted", [](const PyArray& a) { return a.buffer().is_deleted(); })
      .def("delete", [](PyArray& a) { a.buffer().Delete(); }, "Releases the memory now.")
      .def(
          "unsafe_buffer_pointer",
          [](const PyArray& a) {
            ThrowIfError(a.CheckLive());
            return reinterpret_cast<uintptr_t>(a.buffer().opaque_pointer());
          },
          "The address of the first element on its device (a host pointer, a CUdeviceptr), as jax's.")
      .def("numpy", &PyArray::Numpy,
           "The array as numpy: a read-only view of host memory, a copy of device memory. ml_dtypes types "
           "(bfloat16, float8_*, int4, ...) come as themselves.")
      .def("__dlpack__", &PyArray::Dlpack, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none())
      .def(
          "__array__",
          [](PyArray& a, nb::handle dtype, nb::handle copy) {
            nb::object out = a.Numpy();
            if (!dtype.is_none()) out = out.attr("astype")(dtype);
            else if (!copy.is_none() && nb::cast<bool>(copy)) out = out.attr("copy")();
            return out;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__dlpack_device__", &PyArray::DlpackDevice)
      .def("__repr__", &ArrayRepr);

  m.def("_set_array_hooks", [](nb::object coerce, nb::dict dtypes) {
    if (coerce_hook == nullptr) coerce_hook = new nb::object();
    if (numpy_dtypes == nullptr) numpy_dtypes = new nb::dict();
    *coerce_hook = coerce;
    *numpy_dtypes = dtypes;
  });
  m.def(
      "asarray",
      [](nb::handle obj, const std::string& device, std::optional<std::string> type) {
        DeviceRef d = ValueOrThrow(ResolveDevice(device));
        std::optional<PrimitiveType> t;
        if (type) t = ValueOrThrow(ParseElementType(*type));
        return ImportArray(obj, d, t);
      },
      nb::arg("obj"), nb::arg("device") = "", nb::arg("hlo_type") = nb::none());
}

}  // namespace kiln::python
