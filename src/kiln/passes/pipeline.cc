#include "kiln/passes/pipeline.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kiln/base/strings.h"

namespace kiln {

int64_t CountInstructions(const HloModule& module) {
  int64_t n = 0;
  for (HloComputation* c : module.computations()) n += c->instruction_count();
  return n;
}

StatusOr<bool> HloPassPipeline::Run(HloModule& module) {
  bool changed = false;
  for (auto& pass : passes_) {
    // A nested pipeline (directly or inside a fixed-point wrapper) reports its own passes.
    HloPassPipeline* nested = dynamic_cast<HloPassPipeline*>(pass.get());
    if (auto* fix = dynamic_cast<HloPassFix*>(pass.get()))
      nested = dynamic_cast<HloPassPipeline*>(&fix->inner());
    size_t nested_before = nested ? nested->stats().size() : 0;
    PassStats st;
    st.name = StrCat(name_, "/", pass->name());
    st.instructions_before = CountInstructions(module);
    auto start = std::chrono::steady_clock::now();
    StatusOr<bool> result = pass->Run(module);
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok())
      return result.status().WithContext(StrCat("pass ", st.name));
    st.changed = *result;
    st.instructions_after = CountInstructions(module);
    if (nested) {
      for (size_t i = nested_before; i < nested->stats().size(); ++i) {
        PassStats copy = nested->stats()[i];
        copy.name = StrCat(name_, "/", copy.name);
        stats_.push_back(copy);
      }
    }
    stats_.push_back(st);
    if (st.changed) {
      changed = true;
      if (options_.verifier) {
        Status v = options_.verifier(module);
        if (!v.ok()) return v.WithContext(StrCat("module invalid after pass ", st.name));
      }
      if (!options_.dump_dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(options_.dump_dir, ec);
        char prefix[16];
        std::snprintf(prefix, sizeof(prefix), "%02d", dump_counter_++);
        std::string file = StrCat(options_.dump_dir, "/", prefix, ".", name_, ".",
                                  std::string(pass->name()), ".hlo");
        std::ofstream out(file);
        if (!out) return InvalidArgument("cannot write pass dump ", file);
        out << module.ToString();
      }
    }
  }
  return changed;
}

StatusOr<bool> HloPassFix::Run(HloModule& module) {
  bool changed = false;
  for (int i = 0; i < max_iterations_; ++i) {
    KILN_ASSIGN_OR_RETURN(bool c, pass_->Run(module));
    if (!c) break;
    changed = true;
  }
  return changed;
}

}  // namespace kiln
