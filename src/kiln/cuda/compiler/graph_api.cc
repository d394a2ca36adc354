#include "kiln/cuda/compiler/graph_api.h"

#include <memory>
#include <mutex>

namespace kiln::cuda {

StatusOr<const GraphApi*> LoadGraphApi(const DriverApi& api) {
  static std::mutex mu;
  static std::unique_ptr<GraphApi> loaded;
  static Status error;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded) return loaded.get();
  if (!error.ok()) return error;
  auto g = std::make_unique<GraphApi>();
  Status s = [&]() -> Status {
#define KILN_LOAD(name) KILN_RETURN_IF_ERROR(api.library.Load(KILN_CUDA_STRINGIFY(name), &g->name));
    KILN_CUDA_GRAPH_FUNCTIONS(KILN_LOAD)
#undef KILN_LOAD
    return OkStatus();
  }();
  if (!s.ok()) {
    error = s;
    return s;
  }
  g->conditionals = [&]() -> Status {
#define KILN_LOAD(name) KILN_RETURN_IF_ERROR(api.library.Load(KILN_CUDA_STRINGIFY(name), &g->name));
    KILN_CUDA_GRAPH_CONDITIONAL_FUNCTIONS(KILN_LOAD)
#undef KILN_LOAD
    return OkStatus();
  }();
  loaded = std::move(g);
  return loaded.get();
}

StatusOr<const GraphApi*> LoadConditionalGraphApi(const DriverApi& api) {
  KILN_ASSIGN_OR_RETURN(const GraphApi* g, LoadGraphApi(api));
  if (!g->conditionals.ok()) return g->conditionals;
  return g;
}

}  // namespace kiln::cuda
