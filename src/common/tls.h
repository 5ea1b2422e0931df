// Optional mutual TLS between Morpheus processes with operator-provided
// certificates (docs/operator/security.md).
//
// Contract: TLS is all or nothing per process. Either none of the three PEM
// files is named (plaintext gRPC, the default) or all three are: the CA bundle
// that signs every daemon's and client's certificate, this process's
// certificate (chain) and its private key. Then every gRPC server of the
// process requires and verifies a client certificate signed by the CA, and
// every channel it opens presents its certificate and verifies the peer
// against the same CA (and the peer's certificate must name the host it is
// dialled at, as a subjectAltName DNS or IP entry). A process's certificate
// therefore serves as both server and client certificate.
//
// loadTls() validates before anything is used: a partial setting, an
// unreadable file, a file without a PEM certificate or key, a key that does not
// belong to the certificate, an expired certificate or one the CA did not sign
// is INVALID_ARGUMENT naming the option. No gRPC here (pure OpenSSL); the
// credentials are built at the edge (wire.h, daemon.cc).
// Thread-safety: plain values; loadTls is re-entrant.
#pragma once

#include <map>
#include <string>

#include "common/config.h"
#include "common/status.h"

namespace morpheus {

// Paths of the PEM files as configured ("" = not set).
struct TlsFiles {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// The names the three settings have where the user wrote them, used in error
// messages: config keys for daemons, flags for command-line tools.
struct TlsSettingNames {
  std::string ca = "tls.ca-file";
  std::string cert = "tls.cert-file";
  std::string key = "tls.key-file";
};

// The names for tools that take the files as flags or environment variables
// (morpheusctl, morpheus-dag-am).
inline const TlsSettingNames kTlsFlagNames{
    "--tls-ca (MORPHEUS_TLS_CA)", "--tls-cert (MORPHEUS_TLS_CERT)", "--tls-key (MORPHEUS_TLS_KEY)"};

// Loaded, validated PEM text; all empty = TLS off (plaintext).
struct TlsOptions {
  std::string ca_pem;    // trusted CA certificate(s)
  std::string cert_pem;  // own certificate, optionally followed by intermediates
  std::string key_pem;   // own private key

  bool enabled() const { return !ca_pem.empty(); }
};

// Declares tls.ca-file, tls.cert-file and tls.key-file (default "" each) into a
// daemon's schema, bound to `files`.
void addTlsOptions(ConfigSchema& schema, TlsFiles* files);

// Reads and validates the files (see the contract above). All three empty:
// TLS off. Files larger than 1 MiB are refused.
Result<TlsOptions> loadTls(const TlsFiles& files, const TlsSettingNames& names = {});

// Environment variables naming the three files for processes without a config
// file: morpheusctl, and morpheus-dag-am, to which the NM passes the paths it
// was configured with (absolute) when it launches an AM container.
inline constexpr const char* kTlsCaEnv = "MORPHEUS_TLS_CA";
inline constexpr const char* kTlsCertEnv = "MORPHEUS_TLS_CERT";
inline constexpr const char* kTlsKeyEnv = "MORPHEUS_TLS_KEY";

// The files named by those variables (unset or empty = "").
TlsFiles tlsFilesFromEnvironment();
// Those variables for `files`, made absolute (the container's working
// directory differs); empty when TLS is off.
std::map<std::string, std::string> tlsEnvironment(const TlsFiles& files);

}  // namespace morpheus
