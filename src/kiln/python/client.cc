#include "kiln/python/client.h"

#include <map>
#include <memory>
#include <mutex>

#include "kiln/api/environment.h"

namespace kiln::python {

StatusOr<Client*> GetClient() {
  static std::mutex mu;
  static Client* client = nullptr;  // never destroyed (see client.h)
  static Status failure;
  std::lock_guard<std::mutex> lock(mu);
  if (client != nullptr) return client;
  if (!failure.ok()) return failure;
  ApplyEnvironmentToProcess();
  StatusOr<std::unique_ptr<Client>> made = Client::Create(ClientOptionsFromEnvironment());
  if (!made.ok()) {
    failure = made.status();
    return failure;
  }
  client = made->release();
  return client;
}

StatusOr<DeviceRef> ResolveDevice(std::string_view name) {
  static std::mutex mu;
  static std::map<std::string, DeviceRef, std::less<>> resolved;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = resolved.find(name);
    if (it != resolved.end()) return it->second;
  }
  KILN_ASSIGN_OR_RETURN(Client * client, GetClient());
  KILN_ASSIGN_OR_RETURN(DeviceSelection d, client->SelectDevice(name));
  DeviceRef ref{d.backend, d.ordinal, Client::DeviceName(d)};
  std::lock_guard<std::mutex> lock(mu);
  resolved.emplace(std::string(name), ref);
  return ref;
}

}  // namespace kiln::python
