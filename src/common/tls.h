// Optional TLS between Morpheus processes with operator-provided certificates
// (docs/operator/security.md).
//
// Contract, daemons (loadTls): TLS is all or nothing per daemon. Either none
// of the three PEM files is named (plaintext gRPC, the default) or all three
// are: the CA bundle that signs every daemon's and client's certificate, this
// daemon's certificate (chain) and its private key. Then every gRPC server of
// the daemon presents its certificate, and every channel it opens presents it
// too and verifies the peer against the same CA (the peer's certificate must
// name the host it is dialled at, as a subjectAltName DNS or IP entry). A
// daemon's certificate therefore serves as both server and client
// certificate. What the server asks of a client is tls.client-certs:
//  - require: every client must present a certificate the CA signed, or the
//    handshake fails (mutual TLS). The default of morpheus-inference.
//  - request: a client certificate is verified against the CA when one is
//    presented (a bad one fails the handshake), but a client may present none
//    and then is anonymous at the TLS layer: it authenticates by its token
//    alone, over a server-authenticated, encrypted channel. The default of
//    morpheus-rm and morpheus-nm, because application masters hold no
//    certificate: a container never receives its node's key (a secret never
//    leaves the component that holds it); an AM gets the CA bundle only and
//    authenticates by its AM token (RM) and container tokens (NM). Every RPC
//    of those two daemons authenticates its caller by a token, never by the
//    certificate alone; with authentication disabled (rm.auth-disabled,
//    inference.auth-disabled) a caller without a certificate is refused
//    (Authenticator).
//
// Contract, clients (loadClientTls: morpheusctl, morpheus-dag-am): the CA
// alone turns TLS on with server verification and no client certificate;
// the CA with a certificate and its key also presents that certificate; a
// certificate without its key (or the reverse), or either without the CA, is
// refused.
//
// Both validate before anything is used: a partial setting, an unreadable
// file, a file without a PEM certificate or key, a key that does not belong to
// the certificate, an expired certificate or one the CA did not sign is
// INVALID_ARGUMENT naming the option. No gRPC here (pure OpenSSL); the
// credentials are built at the edge (wire.h, daemon.cc).
// Thread-safety: plain values; loadTls and loadClientTls are re-entrant.
#pragma once

#include <string>

#include "common/config.h"
#include "common/status.h"

namespace morpheus {

// What a TLS server asks of its clients (tls.client-certs, see the contract).
enum class TlsClientCerts { kRequire, kRequest };

// The TLS settings as configured: paths of the PEM files ("" = not set) and,
// for daemons, tls.client-certs ("require" or "request").
struct TlsFiles {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string client_certs = "require";
};

// The names the three settings have where the user wrote them, used in error
// messages: config keys for daemons, flags for command-line tools.
struct TlsSettingNames {
  std::string ca = "tls.ca-file";
  std::string cert = "tls.cert-file";
  std::string key = "tls.key-file";
  std::string client_certs = "tls.client-certs";
};

// The names for tools that take the files as flags or environment variables
// (morpheusctl, morpheus-dag-am).
inline const TlsSettingNames kTlsFlagNames{
    "--tls-ca (MORPHEUS_TLS_CA)", "--tls-cert (MORPHEUS_TLS_CERT)", "--tls-key (MORPHEUS_TLS_KEY)"};

// Loaded, validated PEM text; all empty = TLS off (plaintext). A client
// without a certificate has ca_pem only.
struct TlsOptions {
  std::string ca_pem;    // trusted CA certificate(s)
  std::string cert_pem;  // own certificate, optionally followed by intermediates ("" = none)
  std::string key_pem;   // own private key ("" = none)
  // Servers only: what they ask of clients (tls.client-certs).
  TlsClientCerts client_certs = TlsClientCerts::kRequire;

  bool enabled() const { return !ca_pem.empty(); }
  bool hasCertificate() const { return !cert_pem.empty(); }
};

// Declares tls.ca-file, tls.cert-file, tls.key-file (default "" each) and
// tls.client-certs (default `client_certs`) into a daemon's schema, bound to
// `files`.
void addTlsOptions(ConfigSchema& schema, TlsFiles* files,
                   TlsClientCerts client_certs = TlsClientCerts::kRequire);

// "require" / "request".
const char* clientCertsName(TlsClientCerts c);

// A daemon's TLS (see the contract above): all three files or none. All
// three empty: TLS off. Files larger than 1 MiB are refused; a
// tls.client-certs other than "require" or "request" is INVALID_ARGUMENT
// naming it.
Result<TlsOptions> loadTls(const TlsFiles& files, const TlsSettingNames& names = {});
// A client's TLS: the CA alone (server verification, no client certificate),
// the CA with certificate and key, or nothing (plaintext). client_certs is
// ignored.
Result<TlsOptions> loadClientTls(const TlsFiles& files, const TlsSettingNames& names);

// Environment variables naming the three files for processes without a config
// file: morpheusctl, and morpheus-dag-am, to which the NM passes only
// MORPHEUS_TLS_CA (a copy of its CA bundle in the container's directory) when
// it launches an AM container under TLS: never its certificate or key.
inline constexpr const char* kTlsCaEnv = "MORPHEUS_TLS_CA";
inline constexpr const char* kTlsCertEnv = "MORPHEUS_TLS_CERT";
inline constexpr const char* kTlsKeyEnv = "MORPHEUS_TLS_KEY";

// The files named by those variables (unset or empty = "").
TlsFiles tlsFilesFromEnvironment();

}  // namespace morpheus
