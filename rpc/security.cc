#include "rpc/security.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/secret.h"
#include "common/status_macros.h"

namespace graphshard::rpc {
namespace {

// The PEM file of `flag`, errors naming the flag.
absl::StatusOr<std::string> ReadPem(absl::string_view flag, const std::string& path,
                                    bool is_private) {
  // A certificate is public (a plain read); a private key must be 0600 like the token file.
  absl::StatusOr<std::string> pem =
      is_private ? common::ReadPrivateFile(path) : common::ReadFileToString(path);
  if (!pem.ok()) {
    return absl::Status(pem.status().code(), absl::StrCat(flag, ": ", pem.status().message()));
  }
  if (pem->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": not a PEM file"));
  }
  return pem;
}

}  // namespace

void AddSecurityFlags(common::FlagSet& flags, SecurityFlags* f) {
  flags.AddString("token-file", &f->token_file, "PATH",
                  "the job token, in a file of mode 0600 (else $GRAPHSHARD_TOKEN; none: no\n"
                  "token is sent or required). Every RPC and bulk connection carries it");
  flags.AddString("tls-ca", &f->tls_ca, "PEM",
                  "turns TLS on: the CA that signed the servers' (and clients') certificates");
  flags.AddString("tls-cert", &f->tls_cert, "PEM",
                  "this process's certificate (servers; clients with --tls-mutual)");
  flags.AddString("tls-key", &f->tls_key, "PEM", "its private key (mode 0600)");
  flags.AddBool("tls-mutual", &f->tls_mutual,
                "mutual TLS: servers require a client certificate signed by --tls-ca, and\n"
                "this process presents --tls-cert to the servers it calls");
  flags.AddString("tls-server-name", &f->tls_server_name, "NAME",
                  "name expected in server certificates (default: the host dialled)");
}

absl::Status ApplySecurityFlags(const SecurityFlags& f, Role role, RpcOptions* options) {
  ASSIGN_OR_RETURN(options->token, common::LoadJobToken(f.token_file));
  if (f.tls_ca.empty()) {
    for (const auto& [name, set] :
         {std::pair<const char*, bool>{"--tls-cert", !f.tls_cert.empty()},
          {"--tls-key", !f.tls_key.empty()},
          {"--tls-mutual", f.tls_mutual},
          {"--tls-server-name", !f.tls_server_name.empty()}}) {
      if (set) return absl::InvalidArgumentError(absl::StrCat(name, " needs --tls-ca"));
    }
    options->credentials = CredentialsKind::kInsecure;
    return absl::OkStatus();
  }
  options->credentials = CredentialsKind::kTls;
  ASSIGN_OR_RETURN(options->tls.ca_pem, ReadPem("--tls-ca", f.tls_ca, false));
  const bool needs_pair = role == Role::kServer || f.tls_mutual;
  if (needs_pair && (f.tls_cert.empty() || f.tls_key.empty())) {
    return absl::InvalidArgumentError(
        role == Role::kServer ? "TLS servers need --tls-cert and --tls-key"
                              : "--tls-mutual needs --tls-cert and --tls-key");
  }
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!f.tls_cert.empty()) {
    ASSIGN_OR_RETURN(options->tls.cert_pem, ReadPem("--tls-cert", f.tls_cert, false));
    ASSIGN_OR_RETURN(options->tls.key_pem, ReadPem("--tls-key", f.tls_key, true));
  }
  options->tls.mutual = f.tls_mutual;
  options->tls.server_name = f.tls_server_name;
  return absl::OkStatus();
}

std::string JobProof(absl::string_view token, absl::string_view nonce, int part) {
  const std::string message = absl::StrCat("graphshard job proof v1\n", nonce.size(), ":", nonce,
                                           "\npart ", part);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &length);
  return std::string(reinterpret_cast<const char*>(out), length);
}

std::string NewNonce() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    // No entropy is a broken host; a fixed nonce would let a recorded proof be replayed, so
    // fall back to the (also unpredictable) kernel source.
    std::ifstream("/dev/urandom", std::ios::binary).read(reinterpret_cast<char*>(bytes),
                                                         sizeof(bytes));
  }
  return std::string(reinterpret_cast<const char*>(bytes), sizeof(bytes));
}

absl::Status CheckJobProof(absl::string_view token, absl::string_view nonce, int part,
                           absl::string_view proof) {
  if (proof.empty()) {
    return absl::UnauthenticatedError(
        "sent no proof of the job token (a server of another job, or without --token-file)");
  }
  if (!common::ConstantTimeEquals(JobProof(token, nonce, part), proof)) {
    return absl::UnauthenticatedError(
        absl::StrCat("did not prove the job token for part ", part,
                     " (a server of another job, or not a graphshard server)"));
  }
  return absl::OkStatus();
}

std::string DescribeSecurity(const RpcOptions& options) {
  return absl::StrCat(options.token.empty() ? "no token" : "job token", ", ",
                      options.credentials == CredentialsKind::kInsecure ? "plaintext"
                      : options.tls.mutual                              ? "mutual TLS"
                                                                        : "TLS");
}

absl::Status WithPlaintextHint(const absl::Status& s, const RpcOptions& options) {
  if (options.credentials == CredentialsKind::kTls ||
      (!absl::IsUnavailable(s) && !absl::IsDeadlineExceeded(s))) {
    return s;
  }
  return absl::Status(s.code(), absl::StrCat(s.message(),
                                             " (this client speaks plaintext: if the servers use "
                                             "TLS, pass their CA with --tls-ca, as the launchers "
                                             "do; docs/SECURITY.md)"));
}

}  // namespace graphshard::rpc
