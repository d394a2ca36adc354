#include "kiln/cuda/nccl_communicator.h"

#include <algorithm>
#include <thread>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"

namespace kiln::cuda {

StatusOr<std::shared_ptr<NcclWorld>> NcclWorld::CreateInProcess(std::shared_ptr<const NcclApi> api,
                                                                std::vector<CudaDevice*> devices) {
  const int64_t n = static_cast<int64_t>(devices.size());
  if (n == 0) return InvalidArgument("nccl: a world of no participants");
  std::vector<int> ordinals;
  for (CudaDevice* d : devices) {
    if (d == nullptr) return InvalidArgument("nccl: a participant without a device");
    if (std::find(ordinals.begin(), ordinals.end(), d->ordinal()) != ordinals.end())
      return InvalidArgument("nccl: two participants on cuda:", d->ordinal(),
                             " (NCCL runs one rank per GPU: ", n, " participants need ", n, " GPUs)");
    ordinals.push_back(d->ordinal());
  }
  std::shared_ptr<NcclWorld> w(new NcclWorld(std::move(api), n));
  std::vector<nccl::ncclComm_t> comms(n, nullptr);
  KILN_RETURN_IF_ERROR(devices[0]->Activate());
  KILN_RETURN_IF_ERROR(w->Result(w->api_->ncclCommInitAll(comms.data(), static_cast<int>(n), ordinals.data()),
                                 StrCat("ncclCommInitAll of ", n, " GPUs")));
  for (int64_t i = 0; i < n; ++i) {
    Rank& r = w->ranks_[i];
    r.device = devices[i];
    r.world = comms[i];
  }
  return w;
}

StatusOr<std::shared_ptr<NcclWorld>> NcclWorld::CreateWithId(std::shared_ptr<const NcclApi> api,
                                                             const nccl::ncclUniqueId& id, int64_t nranks,
                                                             std::vector<int64_t> local,
                                                             std::vector<CudaDevice*> devices) {
  if (local.size() != devices.size() || local.empty()) return InvalidArgument("nccl: local ranks and devices differ");
  std::shared_ptr<NcclWorld> w(new NcclWorld(std::move(api), nranks));
  std::vector<nccl::ncclComm_t> comms(local.size(), nullptr);
  const NcclApi& a = *w->api_;
  // Several local ranks join in one group (one thread may initialize several).
  if (local.size() > 1) KILN_RETURN_IF_ERROR(w->Result(a.ncclGroupStart(), "ncclGroupStart"));
  Status first;
  for (size_t k = 0; k < local.size(); ++k) {
    if (local[k] < 0 || local[k] >= nranks) return InvalidArgument("nccl: rank ", local[k], " outside a world of ", nranks);
    KILN_RETURN_IF_ERROR(devices[k]->Activate());
    Status s = w->Result(a.ncclCommInitRank(&comms[k], static_cast<int>(nranks), id, static_cast<int>(local[k])),
                         StrCat("ncclCommInitRank (rank ", local[k], " of ", nranks, ")"));
    if (first.ok() && !s.ok()) first = s;
  }
  if (local.size() > 1) {
    Status s = w->Result(a.ncclGroupEnd(), "ncclGroupEnd (ncclCommInitRank)");
    if (first.ok() && !s.ok()) first = s;
  }
  if (!first.ok()) return first;
  for (size_t k = 0; k < local.size(); ++k) {
    Rank& r = w->ranks_[local[k]];
    r.device = devices[k];
    r.world = comms[k];
  }
  return w;
}

NcclWorld::~NcclWorld() {
  if (aborted_.load()) return;  // ncclCommAbort freed them
  for (auto& [rank, r] : ranks_) {
    if (r.device) (void)r.device->Activate();
    for (auto& [group, comm] : r.groups)
      if (comm != r.world) api_->ncclCommDestroy(comm);
    if (r.world) api_->ncclCommDestroy(r.world);
  }
}

bool NcclWorld::IsLocal(int64_t rank) const { return ranks_.count(rank) > 0; }

CudaDevice* NcclWorld::device(int64_t rank) const {
  auto it = ranks_.find(rank);
  return it == ranks_.end() ? nullptr : it->second.device;
}

NcclWorld::Rank* NcclWorld::Local(int64_t rank) {
  auto it = ranks_.find(rank);
  return it == ranks_.end() ? nullptr : &it->second;
}

StatusOr<nccl::ncclComm_t> NcclWorld::World(int64_t rank) {
  if (aborted_.load()) return abort_reason_;
  Rank* r = Local(rank);
  if (r == nullptr) return Internal("nccl: rank ", rank, " does not run in this process");
  return r->world;
}

StatusOr<nccl::ncclComm_t> NcclWorld::Group(int64_t rank, std::span<const int64_t> group) {
  if (aborted_.load()) return abort_reason_;
  Rank* r = Local(rank);
  if (r == nullptr) return Internal("nccl: rank ", rank, " does not run in this process");
  bool whole = static_cast<int64_t>(group.size()) == nranks_;
  for (size_t i = 0; whole && i < group.size(); ++i) whole = group[i] == static_cast<int64_t>(i);
  if (whole) return r->world;
  std::vector<int64_t> key(group.begin(), group.end());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = r->groups.find(key);
    if (it != r->groups.end()) return it->second;
  }
  int key_rank = -1;
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i] == rank) key_rank = static_cast<int>(i);
  if (key_rank < 0) return Internal("nccl: rank ", rank, " is not in its group {", StrJoin(key, ","), "}");
  const int color = static_cast<int>(*std::min_element(group.begin(), group.end()));
  nccl::ncclComm_t comm = nullptr;
  KILN_RETURN_IF_ERROR(r->device->Activate());
  KILN_RETURN_IF_ERROR(Result(api_->ncclCommSplit(r->world, color, key_rank, &comm, nullptr),
                              StrCat("ncclCommSplit for the group {", StrJoin(key, ","), "}"), r->world));
  if (comm == nullptr) return Internal("nccl: ncclCommSplit gave rank ", rank, " no communicator");
  std::lock_guard<std::mutex> lock(mu_);
  r->groups[key] = comm;
  return comm;
}

Status NcclWorld::Check(int64_t rank) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_.load()) return abort_reason_;
  Rank* r = Local(rank);
  if (r == nullptr) return OkStatus();
  auto check = [&](nccl::ncclComm_t c) -> Status {
    nccl::ncclResult_t async = nccl::ncclSuccess;
    nccl::ncclResult_t got = api_->ncclCommGetAsyncError(c, &async);
    if (got != nccl::ncclSuccess) return Result(got, "ncclCommGetAsyncError", c);
    if (async != nccl::ncclSuccess && async != nccl::ncclInProgress)
      return Result(async, StrCat("an operation of world rank ", rank), c);
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(check(r->world));
  for (auto& [group, comm] : r->groups) KILN_RETURN_IF_ERROR(check(comm));
  return OkStatus();
}

void NcclWorld::Abort(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_.load()) return;
  abort_reason_ = why.ok() ? Status(StatusCode::kAborted, "nccl: the world was aborted") : why;
  aborted_.store(true);
  for (auto& [rank, r] : ranks_) {
    if (r.device) (void)r.device->Activate();
    for (auto& [group, comm] : r.groups)
      if (comm != r.world) api_->ncclCommAbort(comm);
    if (r.world) api_->ncclCommAbort(r.world);
    r.groups.clear();
    r.world = nullptr;
  }
}

Status NcclWorld::Wait(int64_t rank, const std::function<StatusOr<bool>()>& done, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(2);
  for (;;) {
    StatusOr<bool> finished = done();
    if (!finished.ok()) {
      Abort(finished.status());
      return finished.status();
    }
    if (*finished) return aborted_.load() ? abort_reason_ : OkStatus();
    Status s = Check(rank);
    if (!s.ok()) {
      Abort(s);
      return s;
    }
    if (std::chrono::steady_clock::now() - start > timeout) {
      Status late(StatusCode::kDeadlineExceeded,
                  StrCat("nccl: world rank ", rank, "'s collectives did not complete within ", timeout.count(),
                         " ms (a peer that failed or never came); every communicator of the run was aborted"));
      Abort(late);
      return late;
    }
    // Spin briefly (a short collective's latency is microseconds), then back off.
    if (std::chrono::steady_clock::now() - start < std::chrono::microseconds(500)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(500));
    }
  }
}

}  // namespace kiln::cuda
