#include "kiln/eval/rendezvous.h"

#include <algorithm>

#include "kiln/base/strings.h"

namespace kiln {

Rendezvous::Rendezvous(int64_t num_participants, RendezvousOptions options)
    : num_participants_(num_participants),
      options_(options),
      finished_(static_cast<size_t>(num_participants > 0 ? num_participants : 0), false) {}

Status Rendezvous::WaitLocked(std::unique_lock<std::mutex>& lock, const std::string& key,
                              const std::function<bool()>& done,
                              const std::function<std::vector<int64_t>()>& missing) {
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  while (!done()) {
    if (!abort_.ok()) return abort_;
    for (int64_t d : missing())
      if (d >= 0 && d < num_participants_ && finished_[d])
        return FailedPrecondition(key, ": participant ", d,
                                  " ended its program without joining (the participants ran "
                                  "different collectives)");
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !done()) {
      if (!abort_.ok()) return abort_;
      return DeadlineExceeded(key, ": participant(s) ", StrJoin(missing(), ","),
                              " did not arrive within ", options_.timeout.count(), " ms");
    }
  }
  return OkStatus();
}

Status Rendezvous::Exchange(const std::string& key, std::span<const int64_t> group, int64_t rank,
                            const void* mine,
                            const std::function<Status(std::span<const void* const>)>& consume) {
  const int64_t n = static_cast<int64_t>(group.size());
  if (rank < 0 || rank >= n) return Internal(key, ": rank ", rank, " outside a group of ", n);
  std::unique_lock<std::mutex> lock(mu_);
  if (!abort_.ok()) return abort_;
  // A key may be reused for the next meeting of the same op (callers that do not count
  // occurrences): a member already in the current meeting waits until that one is over.
  for (auto it = meetings_.find(key);
       it != meetings_.end() && rank < static_cast<int64_t>(it->second->arrived.size()) &&
       it->second->arrived[rank];
       it = meetings_.find(key)) {
    const std::shared_ptr<Meeting> current = it->second;
    KILN_RETURN_IF_ERROR(WaitLocked(
        lock, key,
        [&] {
          auto now = meetings_.find(key);
          return now == meetings_.end() || now->second != current;
        },
        [] { return std::vector<int64_t>{}; }));
  }
  std::shared_ptr<Meeting>& slot = meetings_[key];
  if (!slot) slot = std::make_shared<Meeting>();
  const std::shared_ptr<Meeting> held = slot;  // outlives the map entry if a member fails
  Meeting& m = *held;
  if (m.slots.empty()) {
    m.slots.assign(n, nullptr);
    m.arrived.assign(n, false);
    m.group.assign(group.begin(), group.end());
  }
  if (static_cast<int64_t>(m.slots.size()) != n ||
      !std::equal(m.group.begin(), m.group.end(), group.begin()))
    return Internal(key, ": participants disagree on the group");
  if (m.arrived[rank]) return Internal(key, ": rank ", rank, " arrived twice");
  m.slots[rank] = mine;
  m.arrived[rank] = true;
  ++m.num_arrived;
  cv_.notify_all();
  auto missing_arrivals = [&m] {
    std::vector<int64_t> out;
    for (size_t i = 0; i < m.arrived.size(); ++i)
      if (!m.arrived[i]) out.push_back(m.group[i]);
    return out;
  };
  Status s = WaitLocked(
      lock, key, [&m, n] { return m.num_arrived == n || !m.failed.ok(); }, missing_arrivals);
  if (s.ok() && !m.failed.ok()) s = m.failed;
  if (!s.ok()) {
    // Nobody reads through a pointer of a failed meeting: the members still waiting fail with
    // this status, and a late arrival starts a new meeting (and waits for its own error).
    if (m.failed.ok()) m.failed = s;
    m.slots[rank] = nullptr;
    auto it = meetings_.find(key);
    if (it != meetings_.end() && it->second == held) meetings_.erase(it);
    cv_.notify_all();
    return s;
  }
  const std::vector<const void*> slots = m.slots;
  lock.unlock();
  s = consume(slots);
  lock.lock();
  ++m.num_consumed;
  cv_.notify_all();
  // Everyone must have read through every pointer before anyone returns; consume is the
  // members' own computation and always ends, so this wait is neither aborted nor timed.
  cv_.wait(lock, [&m, n] { return m.num_consumed == n; });
  if (++m.num_left == n) {
    auto it = meetings_.find(key);
    if (it != meetings_.end() && it->second == held) meetings_.erase(it);
  }
  return s;
}

Status Rendezvous::Post(const std::string& key, std::shared_ptr<const void> value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!abort_.ok()) return abort_;
  mailbox_[key].push_back(std::move(value));
  cv_.notify_all();
  return OkStatus();
}

StatusOr<std::shared_ptr<const void>> Rendezvous::Take(const std::string& key, int64_t from) {
  std::unique_lock<std::mutex> lock(mu_);
  KILN_RETURN_IF_ERROR(WaitLocked(
      lock, key, [&] { return mailbox_.count(key) > 0; },
      [from] { return std::vector<int64_t>{from}; }));
  auto it = mailbox_.find(key);
  std::shared_ptr<const void> v = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) mailbox_.erase(it);
  return v;
}

void Rendezvous::Finish(int64_t device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (device >= 0 && device < num_participants_) finished_[device] = true;
  cv_.notify_all();
}

void Rendezvous::Abort(Status why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abort_.ok() && !why.ok()) abort_ = std::move(why);
  cv_.notify_all();
}

}  // namespace kiln
