// Rendezvous: the in-process meeting point of the participants of one multi-device run (threads
// in one process: the evaluator's participants, the CPU backend's virtual devices).
//
// Participants are numbered 0..N-1 by their global device id (replica * num_partitions +
// partition, Note [Participants] in eval/collective_groups.h). Two ways to exchange values:
//
//   Exchange: a collective meeting. Every member of `group` (global device ids, in rank order)
//     calls Exchange with the same key and its own pointer. When all have arrived, each member's
//     `consume` runs with every member's pointer (in rank order); Exchange returns only once
//     every member's consume has returned, so a member's pointer stays valid while the others
//     read through it (the caller's memory, never copied). The key names the op instance: the
//     op, its occurrence number in this participant's run, and its group (two groups running
//     the same op meet separately). A key may also be reused for the op's next meeting: a
//     member that is already in the meeting under that key waits until it is over.
//   Post / Take: point-to-point (send/recv). Post leaves a value under a key and returns at
//     once; Take waits for the oldest value under the key and removes it (first in, first out:
//     a key reused for every message of one channel keeps their order).
//
// Never a hang: every wait ends after `timeout` (DeadlineExceeded naming the key and the
// missing participants), at once when a missing participant has called Finish (it ended its
// program without joining: FailedPrecondition), and at once after Abort (a participant failed:
// every waiter returns the abort status). Once every member has arrived, nobody leaves before
// every consume has returned (consumes are local work; an abort does not cut them short).
// Thread-safe; one Rendezvous per run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/status.h"

namespace kiln {

struct RendezvousOptions {
  // How long a participant waits for the others at one meeting (default: one minute, far
  // above any test's collective; a missing peer is an error after this).
  std::chrono::milliseconds timeout{60000};
};

class Rendezvous {
 public:
  explicit Rendezvous(int64_t num_participants, RendezvousOptions options = {});
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int64_t num_participants() const { return num_participants_; }
  const RendezvousOptions& options() const { return options_; }

  // See the file comment. `rank` is the caller's position in `group`; `mine` may be null.
  // Returns consume's status (or the wait's error; consume does not run then).
  Status Exchange(const std::string& key, std::span<const int64_t> group, int64_t rank,
                  const void* mine,
                  const std::function<Status(std::span<const void* const>)>& consume);

  // Leaves `value` under `key` for one Take (after the values posted under it before).
  Status Post(const std::string& key, std::shared_ptr<const void> value);
  // Waits for the value posted under `key` (from participant `from`, named in the errors).
  StatusOr<std::shared_ptr<const void>> Take(const std::string& key, int64_t from);

  // Participant `device` has ended its program: meetings that still wait for it fail.
  void Finish(int64_t device);
  // A participant failed: every current and later wait returns `why` (kept: the first abort).
  void Abort(Status why);

 private:
  struct Meeting {
    std::vector<const void*> slots;
    std::vector<int64_t> group;
    std::vector<bool> arrived;
    int64_t num_arrived = 0;
    int64_t num_consumed = 0;
    int64_t num_left = 0;
    Status failed;  // set when a member gave up waiting (see Exchange)
  };
  // Waits (lock held) until `done()` or an error; `missing()` names who is awaited.
  Status WaitLocked(std::unique_lock<std::mutex>& lock, const std::string& key,
                    const std::function<bool()>& done,
                    const std::function<std::vector<int64_t>()>& missing);

  const int64_t num_participants_;
  const RendezvousOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Meeting>> meetings_;
  std::map<std::string, std::deque<std::shared_ptr<const void>>> mailbox_;
  std::vector<bool> finished_;
  Status abort_;
};

}  // namespace kiln
