#include "common/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

namespace morpheus {

namespace {

constexpr std::uintmax_t kMaxPemBytes = 1024 * 1024;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};
struct StackFree {
  void operator()(STACK_OF(X509) * s) const { sk_X509_free(s); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

Result<std::string> readPem(const std::string& path, const std::string& name) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) return invalidArgument(name, "cannot read '" + path + "': " + ec.message());
  if (size > kMaxPemBytes) {
    return invalidArgument(name, "'" + path + "' is larger than 1 MiB; not a PEM file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalidArgument(name, "cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return invalidArgument(name, "cannot read '" + path + "'");
  return ss.str();
}

std::unique_ptr<BIO, BioFree> memBio(const std::string& pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate in `pem`, in order; empty when there is none.
std::vector<X509Ptr> parseCerts(const std::string& pem) {
  std::vector<X509Ptr> out;
  auto bio = memBio(pem);
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(x);
  ERR_clear_error();  // the read that ends the loop leaves "no start line"
  return out;
}

// Refuses to prompt for a passphrase: encrypted keys are not supported.
int noPassphrase(char*, int, int, void*) { return -1; }

std::unique_ptr<EVP_PKEY, KeyFree> parseKey(const std::string& pem) {
  auto bio = memBio(pem);
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, noPassphrase, nullptr);
  ERR_clear_error();
  return std::unique_ptr<EVP_PKEY, KeyFree>(k);
}

Status checkValidity(X509* cert, const std::string& name, const std::string& path) {
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    return invalidArgument(name, "certificate in '" + path + "' is not valid yet");
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    return invalidArgument(name, "certificate in '" + path + "' has expired");
  }
  return Status::ok();
}

// OK when chain[0] verifies against the CA certificates with chain[1..] as
// intermediates.
Status checkSignedBy(const std::vector<X509Ptr>& chain, const std::vector<X509Ptr>& cas,
                     const TlsFiles& files, const TlsSettingNames& names) {
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  std::unique_ptr<STACK_OF(X509), StackFree> untrusted(sk_X509_new_null());
  std::unique_ptr<X509_STORE_CTX, StoreCtxFree> ctx(X509_STORE_CTX_new());
  if (!store || !untrusted || !ctx) return internalError("out of memory checking certificates");
  for (const auto& ca : cas) X509_STORE_add_cert(store.get(), ca.get());
  for (size_t i = 1; i < chain.size(); i++) sk_X509_push(untrusted.get(), chain[i].get());
  if (X509_STORE_CTX_init(ctx.get(), store.get(), chain[0].get(), untrusted.get()) != 1) {
    return internalError("cannot set up certificate verification");
  }
  int ok = X509_verify_cert(ctx.get());
  ERR_clear_error();
  if (ok == 1) return Status::ok();
  return invalidArgument(
      names.cert, "certificate in '" + files.cert_file + "' does not verify against " + names.ca +
                      " '" + files.ca_file +
                      "': " + X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())));
}

// Exactly one of the three missing or set, named in the message.
Status checkAllOrNone(const TlsFiles& f, const TlsSettingNames& n) {
  const std::pair<const std::string*, const std::string*> all[] = {
      {&f.ca_file, &n.ca}, {&f.cert_file, &n.cert}, {&f.key_file, &n.key}};
  std::string set, missing;
  for (const auto& [value, name] : all) {
    std::string& list = value->empty() ? missing : set;
    list += (list.empty() ? "" : ", ") + *name;
  }
  if (set.empty() || missing.empty()) return Status::ok();
  std::string first_missing = missing.substr(0, missing.find(','));
  return invalidArgument(first_missing, "required when " + set + " is set (TLS needs " + n.ca +
                                            ", " + n.cert + " and " + n.key + ", or none of them)");
}

// A client's combinations: nothing, the CA alone, or all three.
Status checkClientCombination(const TlsFiles& f, const TlsSettingNames& n) {
  const bool cert = !f.cert_file.empty(), key = !f.key_file.empty();
  if (cert != key) {
    return invalidArgument(cert ? n.key : n.cert,
                           "required when " + (cert ? n.cert : n.key) +
                               " is set (a client certificate needs its key)");
  }
  if (cert && f.ca_file.empty()) {
    return invalidArgument(n.ca, "required when " + n.cert + " and " + n.key +
                                     " are set (the CA verifies the server)");
  }
  return Status::ok();
}

// Reads and checks the CA, and the certificate and key when named.
Result<TlsOptions> loadFiles(const TlsFiles& files, const TlsSettingNames& names) {
  TlsOptions out;
  auto ca = readPem(files.ca_file, names.ca);
  if (!ca.isOk()) return ca.status();
  std::vector<X509Ptr> cas = parseCerts(*ca);
  if (cas.empty()) {
    return invalidArgument(names.ca, "no PEM certificate in '" + files.ca_file + "'");
  }
  out.ca_pem = std::move(ca).value();
  if (files.cert_file.empty()) return out;
  auto cert = readPem(files.cert_file, names.cert);
  if (!cert.isOk()) return cert.status();
  auto key = readPem(files.key_file, names.key);
  if (!key.isOk()) return key.status();
  std::vector<X509Ptr> chain = parseCerts(*cert);
  if (chain.empty()) {
    return invalidArgument(names.cert, "no PEM certificate in '" + files.cert_file + "'");
  }
  auto pkey = parseKey(*key);
  if (!pkey) {
    return invalidArgument(names.key, "no unencrypted PEM private key in '" + files.key_file + "'");
  }
  if (X509_check_private_key(chain[0].get(), pkey.get()) != 1) {
    ERR_clear_error();
    return invalidArgument(names.key, "'" + files.key_file + "' is not the key of " + names.cert +
                                          " '" + files.cert_file + "'");
  }
  if (Status st = checkValidity(chain[0].get(), names.cert, files.cert_file); !st.isOk()) {
    return st;
  }
  if (Status st = checkSignedBy(chain, cas, files, names); !st.isOk()) return st;
  out.cert_pem = std::move(cert).value();
  out.key_pem = std::move(key).value();
  return out;
}

}  // namespace

const char* clientCertsName(TlsClientCerts c) {
  return c == TlsClientCerts::kRequest ? "request" : "require";
}

void addTlsOptions(ConfigSchema& schema, TlsFiles* files, TlsClientCerts client_certs) {
  schema.addString("tls.ca-file", &files->ca_file, "",
                   "PEM file of the CA certificate(s) that sign every Morpheus daemon's and "
                   "client's certificate. Setting tls.ca-file, tls.cert-file and tls.key-file "
                   "turns on TLS for all gRPC traffic of this daemon (outgoing channels present "
                   "tls.cert-file and verify the peer against this CA; what the server asks of "
                   "clients is tls.client-certs). \"\" (default) with the other two \"\" = "
                   "plaintext gRPC.");
  schema.addString("tls.cert-file", &files->cert_file, "",
                   "PEM certificate (chain) of this daemon, signed by tls.ca-file; used as server "
                   "and client certificate, so it names the host peers dial (subjectAltName DNS "
                   "or IP). Never handed to containers. \"\" = TLS off.");
  schema.addString("tls.key-file", &files->key_file, "",
                   "PEM private key (unencrypted) of tls.cert-file; keep it mode 0600. Never "
                   "handed to containers. \"\" = TLS off.");
  schema.addString(
      "tls.client-certs", &files->client_certs, clientCertsName(client_certs),
      "With TLS on: what this daemon's gRPC server asks of clients. require: every client "
      "presents a certificate signed by tls.ca-file (mutual TLS). request: a presented "
      "certificate is verified, but a client may present none and then authenticates by its "
      "token alone (application masters, which get only the CA bundle, never a node's key, "
      "reach the RM with their AM token and NMs with container tokens; every RM and NM call "
      "checks a token). Default request on morpheus-rm and morpheus-nm (else AMs cannot work "
      "under TLS), require on morpheus-inference.",
      {"require", "request"});
}

Result<TlsOptions> loadTls(const TlsFiles& files, const TlsSettingNames& names) {
  if (Status st = checkAllOrNone(files, names); !st.isOk()) return st;
  TlsClientCerts mode;
  if (files.client_certs == "require") {
    mode = TlsClientCerts::kRequire;
  } else if (files.client_certs == "request") {
    mode = TlsClientCerts::kRequest;
  } else {
    return invalidArgument(names.client_certs,
                           "must be require or request, got '" + files.client_certs + "'");
  }
  if (files.ca_file.empty()) return TlsOptions{};
  auto out = loadFiles(files, names);
  if (out.isOk()) out->client_certs = mode;
  return out;
}

Result<TlsOptions> loadClientTls(const TlsFiles& files, const TlsSettingNames& names) {
  if (Status st = checkClientCombination(files, names); !st.isOk()) return st;
  if (files.ca_file.empty()) return TlsOptions{};
  return loadFiles(files, names);
}

TlsFiles tlsFilesFromEnvironment() {
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  TlsFiles f;
  f.ca_file = get(kTlsCaEnv);
  f.cert_file = get(kTlsCertEnv);
  f.key_file = get(kTlsKeyEnv);
  return f;
}

}  // namespace morpheus
