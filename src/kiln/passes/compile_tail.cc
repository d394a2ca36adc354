#include "kiln/passes/compile_tail.h"

#include "kiln/base/strings.h"
#include "kiln/passes/buffer_assignment_checker.h"

namespace kiln {

StepTimer::StepTimer(const HloModule& module, std::string prefix, std::vector<PassStats> steps)
    : module_(module), prefix_(std::move(prefix)), steps_(std::move(steps)), start_(std::chrono::steady_clock::now()) {}

void StepTimer::Done(std::string_view name) {
  const auto now = std::chrono::steady_clock::now();
  PassStats st;
  st.name = StrCat(prefix_, "/", name);
  st.seconds = std::chrono::duration<double>(now - start_).count();
  st.instructions_before = st.instructions_after = CountInstructions(module_);
  steps_.push_back(std::move(st));
  start_ = now;
}

StatusOr<ScheduledModule> ScheduleAndAssignBuffers(const HloModule& module, const CompileTailOptions& options,
                                                   StepTimer& timer) {
  ScheduledModule out;
  out.schedule = std::make_unique<HloSchedule>(options.memory_aware_schedule ? MemoryAwareSchedule(module)
                                                                             : PostOrderSchedule(module));
  SinkLoopStateUpdates(module, *out.schedule);  // Note [Sinking loop state updates]
  KILN_RETURN_IF_ERROR(out.schedule->Verify(module).WithContext(StrCat(options.context, ": schedule")));
  timer.Done(options.memory_aware_schedule ? "memory-aware-schedule" : "post-order-schedule");
  BufferAssignmentOptions bo = options.buffers;
  bo.schedule = out.schedule.get();
  KILN_ASSIGN_OR_RETURN(out.assignment, BufferAssignment::Run(module, bo));
  timer.Done("buffer-assignment");
  if (options.check_buffer_assignment) {
    BufferCheckOptions co;
    co.schedule = out.schedule.get();
    co.alignment = bo.alignment;
    KILN_RETURN_IF_ERROR(VerifyBufferAssignment(module, *out.assignment, co).WithContext(options.context));
    timer.Done("buffer-assignment-checker");
  }
  return out;
}

}  // namespace kiln
