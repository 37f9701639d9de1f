#ifndef GRAPHSHARD_RPC_SECURITY_H_
#define GRAPHSHARD_RPC_SECURITY_H_

// The security flags every graphshard binary that speaks gRPC takes (server, trainer, health),
// declared once here so their spellings and checks cannot drift apart, and turned into the
// token and TLS fields of an RpcOptions (docs/SECURITY.md). No gRPC types: option structs may
// hold a SecurityFlags without including grpcpp. Thread-compatible.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"
#include "rpc/options.h"

namespace graphshard::rpc {

// The metadata key every call carries the token under, as "Bearer <token>".
inline constexpr char kTokenMetadataKey[] = "authorization";

struct SecurityFlags {
  std::string token_file;  // --token-file (else GRAPHSHARD_TOKEN; the token never on argv)
  std::string tls_ca;      // --tls-ca PEM: turns TLS on
  std::string tls_cert;    // --tls-cert PEM
  std::string tls_key;     // --tls-key PEM (0600)
  bool tls_mutual = false;       // --tls-mutual
  std::string tls_server_name;   // --tls-server-name
};

// Binds --token-file, --tls-ca, --tls-cert, --tls-key, --tls-mutual, --tls-server-name.
void AddSecurityFlags(common::FlagSet& flags, SecurityFlags* f);

enum class Role { kServer, kClient };

// Loads the token (common::LoadJobToken) and, if --tls-ca is given, the PEM files into
// `options` (credentials = kTls). A server needs --tls-cert and --tls-key; a client needs them
// only with --tls-mutual. InvalidArgument / PermissionDenied / NotFound naming the flag and file
// (a key file must be 0600 like the token file); --tls-cert, --tls-key, --tls-mutual or
// --tls-server-name without --tls-ca is InvalidArgument.
absl::Status ApplySecurityFlags(const SecurityFlags& f, Role role, RpcOptions* options);

// `s` with a hint where a plaintext client (`options` without TLS) could not reach a server
// (UNAVAILABLE, DEADLINE_EXCEEDED): a TLS server never answers plaintext, and gRPC says only
// "Deadline Exceeded". Other statuses, and TLS clients, unchanged.
absl::Status WithPlaintextHint(const absl::Status& s, const RpcOptions& options);

// The proof that a server holds the job token (Metadata.job_proof): HMAC-SHA256 under the token
// of a domain label, the client's nonce and the part the server says it serves (32 bytes).
std::string JobProof(absl::string_view token, absl::string_view nonce, int part);

// 16 bytes from OpenSSL's CSPRNG, for GetMetadataRequest.nonce.
std::string NewNonce();

// OK if `proof` is JobProof(token, nonce, part) (constant-time compare); otherwise
// Unauthenticated saying that the server did not prove the job token.
absl::Status CheckJobProof(absl::string_view token, absl::string_view nonce, int part,
                           absl::string_view proof);

// One line for logs: "token, TLS (mutual)" / "no token, plaintext". Never shows the token.
std::string DescribeSecurity(const RpcOptions& options);

}  // namespace graphshard::rpc

#endif  // GRAPHSHARD_RPC_SECURITY_H_
