// kiln.Array: one kiln Buffer seen from Python, and the DLPack doors in and out.
//
// In (ImportArray): anything with __dlpack__ (numpy, jax, torch, cupy, a kiln.Array) is wrapped
// without a copy where the memory can be used as it is -- on the target device, compact
// row-major, aligned to its element size -- and copied otherwise (host memory for a GPU
// target, strided or misaligned host arrays). Objects without __dlpack__ (Python scalars,
// lists, buffer-protocol objects, numpy arrays of ml_dtypes types, which numpy cannot export)
// are first made numpy arrays by the `coerce` hook that kiln/_arrays.py registers.
// A wrapped array keeps the producer's DLPack tensor until the buffer and every result sharing
// its memory are gone, then calls its deleter (holding the GIL: numpy's deleter needs it).
//
// Out (Array.__dlpack__): a "dltensor_versioned" capsule (DLManagedTensorVersioned, DLPack 1.1)
// when the consumer passes max_version >= (1, 0), else the legacy "dltensor" capsule. The
// tensor shares the buffer's memory (shared ownership: it outlives the Array if need be), except
// for copy=True and for a device array asked for on the host (dl_device=(kDLCPU, 0)): a copy. A
// consumer that passes no dl_device gets the array where it is: numpy's from_dlpack refuses a
// CUDA capsule ("Unsupported device in DLTensor"), as it refuses torch's; .numpy() and
// __array__ (np.asarray) always give numpy host memory.
// Array.numpy(): a read-only numpy view of a host array (ml_dtypes types included), a copy of a
// device array.
//
// Ownership and donation: an Array is `owned` when kiln made its memory (a result of a run, a
// copy made on import). Donating an argument (Executable::Execute consumes it) passes an owned
// Array's buffer as is -- the Array is deleted afterwards, as jax deletes donated arrays --
// unless something else still sees the memory (a live DLPack export or numpy view); borrowed
// memory (a numpy, jax or torch array, read-only or not) is never donated: a copy is, so the
// caller's array is never overwritten.
//
// Note [Streams across DLPack]
// kiln's runs are complete when Execute returns (every backend waits for its streams), so an
// exported array is ready on every stream: __dlpack__'s `stream` asks nothing of kiln. Going in,
// kiln executes on streams of its own (non-blocking, made by the cuda backend, not visible to
// the binding), so it asks a CUDA producer for its array on the legacy default stream --
// `stream=1`, the array API's value for it (None means the same by the standard, but older
// torch releases take None as "no synchronization") --
// and the binding waits on the host for that stream (cuda_sync.h) before kiln's streams touch
// the memory: once per run for all its arguments, with the GIL released
// (PyExecutable::RunFlat). The producer orders before the stream it is given the work of its
// *current* stream at the time of the call (torch: torch.cuda.current_stream()); work it queued
// on another stream is the caller's to order, as within the producer's own framework. Host
// producers (numpy: type checked, others: __dlpack_device__ asked first) get `stream=None`, the
// only value they take. Going out, dl_device=(kDLCPU, 0) (numpy's from_dlpack(x,
// device="cpu")) gets a host copy of a device array (flagged as copied), unless copy=False.
//
// Thread safety: as a Buffer's; the binding holds the GIL while it touches an Array.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "kiln/backend/buffer.h"
#include "kiln/hlo/types.h"
#include "kiln/python/client.h"

namespace kiln::python {

// Note [Results keep their executables]
// A cpu result's memory is a lease of its executable's arena pool (cpu/executable.h,
// ExecutionOutput returns it there on destruction), so an executable must outlive the results
// of its runs -- and, through donation, the results that took their memory over. Every Array
// (and every export of one) therefore holds the set of executables its memory may go back to:
// its own run's, merged with those of the arguments it took over; a training loop that feeds
// its result back keeps a set of one.
using KeepAlive = std::shared_ptr<const std::vector<std::shared_ptr<const void>>>;

class PyArray {
 public:
  PyArray(std::shared_ptr<Buffer> buffer, bool owned, KeepAlive keep = nullptr)
      : keep_(std::move(keep)),
        buffer_(std::move(buffer)),
        owned_(owned),
        exports_(std::make_shared<std::atomic<int>>(0)) {}

  // Arrays are values: copies share the buffer and the export count.
  Buffer& buffer() const { return *buffer_; }
  const std::shared_ptr<Buffer>& shared_buffer() const { return buffer_; }
  bool owned() const { return owned_; }
  // A DLPack export or numpy view of the memory is alive.
  bool exported() const { return exports_->load() > 0; }
  // Fails (FailedPrecondition, saying why) when the buffer was donated or deleted.
  Status CheckLive() const;

  nanobind::object Dlpack(nanobind::handle stream, nanobind::handle max_version, nanobind::handle dl_device,
                          nanobind::handle copy);
  nanobind::tuple DlpackDevice() const;
  nanobind::object Numpy();

  // Counts the live exports (each ExportView adds one).
  const std::shared_ptr<std::atomic<int>>& exports() const { return exports_; }
  // Note [Results keep their executables]
  const KeepAlive& keep() const { return keep_; }

 private:
  KeepAlive keep_;  // first: released after the buffer (Note [Results keep their executables])
  std::shared_ptr<Buffer> buffer_;
  bool owned_ = false;
  std::shared_ptr<std::atomic<int>> exports_;
};

// `obj` on device `device` as an Array (see above). `type`: the element type the array is
// meant to have, for the coerce hook of scalars and lists (nullopt: its own). Python errors
// propagate as nanobind::python_error, kiln errors as StatusError. A CUDA producer's array
// needs the wait for the legacy default stream (Note [Streams across DLPack]): done here, or,
// with `deferred_wait`, left to the caller (*deferred_wait = the device ordinal), who waits once
// for all its arguments.
PyArray ImportArray(nanobind::handle obj, const DeviceRef& device, std::optional<PrimitiveType> type,
                    int* deferred_wait = nullptr);

// A fresh copy of `array` (on the same device), owned.
StatusOr<PyArray> CopyArray(const PyArray& array, const DeviceRef& device);

// The kiln type for an element type named as HLO text names it ("f32"); InvalidArgument else.
StatusOr<PrimitiveType> ParseElementType(std::string_view name);

void RegisterArray(nanobind::module_& m);

}  // namespace kiln::python
