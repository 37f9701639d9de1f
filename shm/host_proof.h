#ifndef GRAPHSHARD_SHM_HOST_PROOF_H_
#define GRAPHSHARD_SHM_HOST_PROOF_H_

// Proof that a client shares the server's host before it is sent shared memory: the server
// keeps a random secret in a POSIX shared-memory object of mode 0600 (/dev/shm/<name>) and
// publishes only its name (Metadata.host_proof_name); a client that can read the object is on
// this host, as this user (exactly who can open the server's segments), and sends the secret
// back (client_host_proof). Copying host_id from GetMetadata no longer gets shared memory.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphshard::shm {

class HostProof {
 public:
  // Creates `<prefix>host-proof` (prefix: NewShmPrefix(), "/graphshard-<pid>-<nonce>-", so
  // that RemoveOwnAndStaleShm removes it with the server's segments) holding 32 random bytes
  // in hex. Internal (naming the object) if it cannot be made.
  static absl::StatusOr<std::unique_ptr<HostProof>> Create(const std::string& prefix);
  ~HostProof();  // unlinks the object
  HostProof(const HostProof&) = delete;
  HostProof& operator=(const HostProof&) = delete;

  const std::string& name() const { return name_; }
  // True when `proof` is the secret; constant time in the secret's length. Thread-safe.
  bool Verify(absl::string_view proof) const;

 private:
  HostProof(std::string name, std::string secret)
      : name_(std::move(name)), secret_(std::move(secret)) {}
  std::string name_;
  std::string secret_;
};

// What the object `name` holds (the client side). NotFound / PermissionDenied when this process
// cannot read it (another host, another user); InvalidArgument for a name that is not one.
absl::StatusOr<std::string> ReadHostProof(const std::string& name);

}  // namespace graphshard::shm

#endif  // GRAPHSHARD_SHM_HOST_PROOF_H_
