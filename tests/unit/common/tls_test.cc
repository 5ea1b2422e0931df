// Unit tests for the mutual-TLS settings (common/tls.h): all three files or
// none, and every unusable file refused with the option's name. The PEM files
// come from a throwaway CA made here with OpenSSL's C API.
#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/tls.h"

namespace morpheus {
namespace {

namespace fs = std::filesystem;

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, X509Free>;

void addExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `cn` valid from now+not_before_s to now+not_after_s,
// signed by (issuer, issuer_key), or self-signed CA when issuer is null.
CertPtr makeCert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                 long not_before_s = -60, long not_after_s = 3600) {
  static long serial = 1;
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), not_after_s);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (issuer) {
    addExt(cert.get(), signer, NID_subject_alt_name, "IP:127.0.0.1");
  } else {
    addExt(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    addExt(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  }
  X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256());
  return cert;
}

KeyPtr newKey() { return KeyPtr(EVP_EC_gen("P-256")); }

std::string certPem(X509* c) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, c);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string s(data, static_cast<size_t>(n));
  BIO_free(b);
  return s;
}

std::string keyPem(EVP_PKEY* k) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string s(data, static_cast<size_t>(n));
  BIO_free(b);
  return s;
}

class TlsOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tls-unit-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ca_key_ = newKey();
    ca_ = makeCert("test-ca", ca_key_.get(), nullptr, nullptr);
    key_ = newKey();
    cert_ = makeCert("morpheus-rm", key_.get(), ca_.get(), ca_key_.get());
    good_ = {write("ca.pem", certPem(ca_.get())), write("rm.pem", certPem(cert_.get())),
             write("rm.key", keyPem(key_.get()))};
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // The message of loadTls(files)'s error, "" when it succeeded.
  static std::string error(const TlsFiles& files, const TlsSettingNames& names = {}) {
    auto r = loadTls(files, names);
    if (r.isOk()) return "";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().message();
    return r.status().message();
  }
  static bool startsWith(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
  }

  fs::path dir_;
  KeyPtr ca_key_, key_;
  CertPtr ca_, cert_;
  TlsFiles good_;
};

// No file named: TLS is off (plaintext), not an error.
TEST_F(TlsOptionsTest, NoFilesMeansPlaintext) {
  auto r = loadTls(TlsFiles{});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_FALSE(r->enabled());
}

// A CA, a certificate it signed and that certificate's key load as given.
TEST_F(TlsOptionsTest, ValidFilesLoad) {
  auto r = loadTls(good_);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_TRUE(r->enabled());
  EXPECT_EQ(r->ca_pem, certPem(ca_.get()));
  EXPECT_EQ(r->cert_pem, certPem(cert_.get()));
  EXPECT_EQ(r->key_pem, keyPem(key_.get()));
}

// One or two of the three set is refused, naming the first missing option.
TEST_F(TlsOptionsTest, PartialSettingNamesTheMissingOption) {
  EXPECT_TRUE(
      startsWith(error({good_.ca_file, "", ""}), "tls.cert-file: required when tls.ca-file"));
  EXPECT_TRUE(startsWith(error({good_.ca_file, good_.cert_file, ""}), "tls.key-file: required"));
  EXPECT_TRUE(startsWith(error({"", good_.cert_file, good_.key_file}), "tls.ca-file: required"));
  EXPECT_TRUE(startsWith(error({"", "", good_.key_file}), "tls.ca-file: required"));
}

// A file that cannot be read is refused with its option and path.
TEST_F(TlsOptionsTest, UnreadableFileNamesTheOption) {
  std::string missing = (dir_ / "nope.pem").string();
  std::string e = error({good_.ca_file, missing, good_.key_file});
  EXPECT_TRUE(startsWith(e, "tls.cert-file: cannot read '" + missing + "'")) << e;
  e = error({dir_.string(), good_.cert_file, good_.key_file});
  EXPECT_TRUE(startsWith(e, "tls.ca-file: cannot read")) << e;
}

// Files without a PEM certificate or key are refused with the option's name.
TEST_F(TlsOptionsTest, InvalidPemNamesTheOption) {
  std::string junk = write("junk.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n");
  std::string e = error({junk, good_.cert_file, good_.key_file});
  EXPECT_TRUE(startsWith(e, "tls.ca-file: no PEM certificate")) << e;
  e = error({good_.ca_file, junk, good_.key_file});
  EXPECT_TRUE(startsWith(e, "tls.cert-file: no PEM certificate")) << e;
  // A certificate where the key belongs is not a key.
  e = error({good_.ca_file, good_.cert_file, good_.cert_file});
  EXPECT_TRUE(startsWith(e, "tls.key-file: no unencrypted PEM private key")) << e;
}

// The key of another certificate is refused (the handshake would fail later).
TEST_F(TlsOptionsTest, KeyOfAnotherCertificateIsRefused) {
  KeyPtr other = newKey();
  std::string e = error({good_.ca_file, good_.cert_file, write("other.key", keyPem(other.get()))});
  EXPECT_TRUE(startsWith(e, "tls.key-file: '")) << e;
  EXPECT_NE(e.find("is not the key of tls.cert-file"), std::string::npos) << e;
}

// A certificate another CA signed would be refused by every peer: refused at start.
TEST_F(TlsOptionsTest, CertificateOfAnotherCaIsRefused) {
  KeyPtr other_ca_key = newKey();
  CertPtr other_ca = makeCert("other-ca", other_ca_key.get(), nullptr, nullptr);
  CertPtr foreign = makeCert("morpheus-rm", key_.get(), other_ca.get(), other_ca_key.get());
  std::string e =
      error({good_.ca_file, write("foreign.pem", certPem(foreign.get())), good_.key_file});
  EXPECT_TRUE(startsWith(e, "tls.cert-file: certificate in")) << e;
  EXPECT_NE(e.find("does not verify against tls.ca-file"), std::string::npos) << e;
}

// An expired certificate is refused at start, not at the first handshake.
TEST_F(TlsOptionsTest, ExpiredCertificateIsRefused) {
  CertPtr old = makeCert("morpheus-rm", key_.get(), ca_.get(), ca_key_.get(), -7200, -3600);
  std::string e = error({good_.ca_file, write("old.pem", certPem(old.get())), good_.key_file});
  EXPECT_TRUE(startsWith(e, "tls.cert-file: certificate in")) << e;
  EXPECT_NE(e.find("has expired"), std::string::npos) << e;
}

// Tools name their flags and environment variables instead of config keys.
TEST_F(TlsOptionsTest, ToolsNameTheirFlags) {
  std::string e = error({good_.ca_file, "", ""}, kTlsFlagNames);
  EXPECT_TRUE(startsWith(e, "--tls-cert (MORPHEUS_TLS_CERT): required when --tls-ca")) << e;
}

// tls.client-certs: require (the default) or request; anything else is
// refused naming the option, even with TLS off.
TEST_F(TlsOptionsTest, ClientCertsModeIsRequireOrRequest) {
  auto r = loadTls(good_);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->client_certs, TlsClientCerts::kRequire);
  TlsFiles request = good_;
  request.client_certs = "request";
  r = loadTls(request);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->client_certs, TlsClientCerts::kRequest);
  TlsFiles bad = good_;
  bad.client_certs = "optional";
  EXPECT_TRUE(startsWith(error(bad),
                         "tls.client-certs: must be require or request, got "
                         "'optional'"));
  bad.ca_file = bad.cert_file = bad.key_file = "";
  EXPECT_TRUE(startsWith(error(bad), "tls.client-certs: must be"));
}

// A client (morpheusctl, an AM) may name the CA alone: TLS that verifies the
// server and presents no certificate. A daemon may not (above).
TEST_F(TlsOptionsTest, ClientWithTheCaAloneHasNoCertificate) {
  TlsFiles ca_only;
  ca_only.ca_file = good_.ca_file;
  auto r = loadClientTls(ca_only, kTlsFlagNames);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_TRUE(r->enabled());
  EXPECT_FALSE(r->hasCertificate());
  EXPECT_EQ(r->ca_pem, certPem(ca_.get()));
  EXPECT_TRUE(r->key_pem.empty());
  auto all = loadClientTls(good_, kTlsFlagNames);
  ASSERT_TRUE(all.isOk()) << all.status().message();
  EXPECT_TRUE(all->hasCertificate());
  auto none = loadClientTls(TlsFiles{}, kTlsFlagNames);
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE(none->enabled());
}

// A client's certificate without its key (or the reverse), or either without
// the CA, is refused naming the missing flag; a bad CA is checked as for daemons.
TEST_F(TlsOptionsTest, ClientHalfACertificateIsRefused) {
  auto message = [](const TlsFiles& f) {
    auto r = loadClientTls(f, kTlsFlagNames);
    return r.isOk() ? std::string() : r.status().message();
  };
  std::string e = message({good_.ca_file, good_.cert_file, ""});
  EXPECT_TRUE(startsWith(e, "--tls-key (MORPHEUS_TLS_KEY): required when --tls-cert")) << e;
  e = message({good_.ca_file, "", good_.key_file});
  EXPECT_TRUE(startsWith(e, "--tls-cert (MORPHEUS_TLS_CERT): required when --tls-key")) << e;
  e = message({"", good_.cert_file, good_.key_file});
  EXPECT_TRUE(startsWith(e, "--tls-ca (MORPHEUS_TLS_CA): required when --tls-cert")) << e;
  e = message({write("junk.pem", "junk\n"), "", ""});
  EXPECT_TRUE(startsWith(e, "--tls-ca (MORPHEUS_TLS_CA): no PEM certificate")) << e;
}

}  // namespace
}  // namespace morpheus
