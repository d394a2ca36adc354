// The compile tail: what every platform compiler does after its pass pipeline, written once.
//
//   StepTimer timer(module, "cpu", pipeline.stats());       // the pipeline's rows first
//   KILN_ASSIGN_OR_RETURN(ScheduledModule s, ScheduleAndAssignBuffers(module, tail, timer));
//   ... thunk emission ...;  timer.Done("thunk-emission");
//   stats.passes = timer.TakeSteps();
//
// ScheduleAndAssignBuffers orders the module (the memory-aware list scheduler, or post order),
// verifies the order, assigns buffers in it, and optionally runs the independent buffer
// assignment checker; each step is timed into the StepTimer as a PassStats row named
// "<prefix>/<step>" so that `kiln compile --stats` shows them beside the passes.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/hlo_schedule.h"
#include "kiln/passes/pipeline.h"

namespace kiln {

// Times the steps after a pass pipeline, one PassStats row per step (instruction counts are
// the module's at the step's end).
class StepTimer {
 public:
  StepTimer(const HloModule& module, std::string prefix, std::vector<PassStats> steps = {});
  // Records the time since the last Done (or construction) as step `name`.
  void Done(std::string_view name);
  std::vector<PassStats> TakeSteps() { return std::move(steps_); }

 private:
  const HloModule& module_;
  std::string prefix_;
  std::vector<PassStats> steps_;
  std::chrono::steady_clock::time_point start_;
};

struct CompileTailOptions {
  // Lower peak memory with the memory-aware list scheduler (off: post order). Default on.
  bool memory_aware_schedule = true;
  // Buffer assignment's options (alignment, donation, ...); `schedule` is filled in here.
  BufferAssignmentOptions buffers;
  // Run the independent buffer-assignment checker after assigning. Default off.
  bool check_buffer_assignment = false;
  // Names the compiler in error contexts ("cpu compiler").
  std::string context = "compiler";
};

struct ScheduledModule {
  std::unique_ptr<HloSchedule> schedule;
  std::unique_ptr<BufferAssignment> assignment;
};

StatusOr<ScheduledModule> ScheduleAndAssignBuffers(const HloModule& module, const CompileTailOptions& options,
                                                   StepTimer& timer);

}  // namespace kiln
