#include "server/tls/tls_config.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace tessera {
namespace {

namespace ssl = boost::asio::ssl;

// The last OpenSSL error as text (and the queue cleared), or `fallback`.
std::string openssl_error(const std::string& fallback) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return fallback;
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

Result<std::string> read_pem_file(const std::filesystem::path& file, const char* what) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return Status::invalid_argument("cannot read the TLS " + std::string(what) + " " + file.string() + ": " +
                                    std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::invalid_argument("cannot read the TLS " + std::string(what) + " " + file.string());
  return text.str();
}

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

Bio memory_bio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
}

// The certificates of a PEM text, in order (none when it holds none).
std::vector<X509Ptr> parse_certificates(const std::string& pem) {
  std::vector<X509Ptr> out;
  Bio bio = memory_bio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(cert, &X509_free);
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

}  // namespace

Result<std::optional<TlsMaterial>> load_tls_material(const TlsFiles& files) {
  if (files.cert.empty() && files.key.empty() && files.client_ca.empty()) return std::optional<TlsMaterial>();
  if (files.cert.empty() || files.key.empty()) {
    return Status::invalid_argument(
        "TLS needs both --tls-cert and --tls-key" +
        std::string(files.client_ca.empty() ? "" : " (--tls-client-ca alone is not enough)"));
  }
  TlsMaterial tls;
  TESSERA_ASSIGN_OR_RETURN(tls.cert_chain_pem, read_pem_file(files.cert, "certificate"));
  TESSERA_ASSIGN_OR_RETURN(tls.key_pem, read_pem_file(files.key, "key"));
  const std::vector<X509Ptr> chain = parse_certificates(tls.cert_chain_pem);
  if (chain.empty()) {
    return Status::invalid_argument("the TLS certificate " + files.cert.string() + " holds no PEM certificate");
  }
  Bio key_bio = memory_bio(tls.key_pem);
  KeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  if (!key) {
    return Status::invalid_argument("the TLS key " + files.key.string() + " holds no PEM private key (" +
                                    openssl_error("unreadable") + ")");
  }
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return Status::invalid_argument("the TLS key " + files.key.string() + " does not match the certificate " +
                                    files.cert.string());
  }
  if (!files.client_ca.empty()) {
    TESSERA_ASSIGN_OR_RETURN(tls.client_ca_pem, read_pem_file(files.client_ca, "client CA"));
    if (parse_certificates(tls.client_ca_pem).empty()) {
      return Status::invalid_argument("the TLS client CA " + files.client_ca.string() + " holds no PEM certificate");
    }
  }
  return std::optional<TlsMaterial>(std::move(tls));
}

grpc_server_credentials* grpc_core_server_credentials(const std::optional<TlsMaterial>& tls) {
  if (!tls) return grpc_insecure_server_credentials_create();
  grpc_ssl_pem_key_cert_pair pair{tls->key_pem.c_str(), tls->cert_chain_pem.c_str()};
  // Core copies the PEM strings.
  return grpc_ssl_server_credentials_create_ex(tls->mutual() ? tls->client_ca_pem.c_str() : nullptr, &pair, 1,
                                               tls->mutual()
                                                   ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                                   : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
                                               nullptr);
}

Result<std::shared_ptr<ssl::context>> make_https_context(const TlsMaterial& tls) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                           ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       ec);
  if (!ec) context->use_certificate_chain(boost::asio::buffer(tls.cert_chain_pem), ec);
  if (!ec) context->use_private_key(boost::asio::buffer(tls.key_pem), ssl::context::pem, ec);
  if (!ec && tls.mutual()) {
    context->add_certificate_authority(boost::asio::buffer(tls.client_ca_pem), ec);
    if (!ec) context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
  }
  if (ec) return Status::invalid_argument("HTTPS: cannot set up TLS: " + ec.message());
  return context;
}

}  // namespace tessera
