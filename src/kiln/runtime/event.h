// Event: a marker in a stream's work, used to order streams against each other and to time work.
//
// Semantics (the CUDA model, which the host driver follows):
//   - Stream::RecordEvent(e) captures "all work enqueued on the stream so far"; the event
//     completes when that work has finished. Recording again re-arms the event: later queries and
//     waits refer to the newest record.
//   - Stream::WaitEvent(e) makes the waiting stream's later work wait for the record that was
//     most recent when WaitEvent was called. Waiting on a never-recorded event is a no-op.
//   - IsComplete() on a never-recorded event is true.
//
// Thread safety: Record/Wait/Query may be called from any thread; one event must not be
// recorded on two streams concurrently. An Event must outlive the streams' use of it (destroying
// an event with pending records is allowed; the records still complete).
#pragma once

#include "kiln/base/status.h"

namespace kiln::runtime {

struct EventOptions {
  // Whether the event records timestamps for ElapsedMillis (CUDA events without timing are
  // cheaper to record and wait on). Default: off.
  bool enable_timing = false;
};

class Event {
 public:
  virtual ~Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // True when the most recent record has completed (or the event was never recorded).
  virtual StatusOr<bool> IsComplete() = 0;
  // Blocks the calling thread until the most recent record has completed.
  virtual Status Synchronize() = 0;
  // Milliseconds between the completion of `start`'s record and this event's record. Both
  // events need enable_timing, both must have completed, and both must belong to one device.
  virtual StatusOr<float> ElapsedMillisSince(const Event& start) const = 0;

  bool timing_enabled() const { return timing_enabled_; }

 protected:
  explicit Event(bool timing_enabled) : timing_enabled_(timing_enabled) {}

 private:
  bool timing_enabled_;
};

}  // namespace kiln::runtime
