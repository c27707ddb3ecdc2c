// TLS for both servers (--tls-cert, --tls-key, optional --tls-client-ca for mutual TLS): the PEM
// files read and checked once at start (a missing or unreadable file, a file that holds no
// certificate or key, or a key that does not match the certificate is an error naming the file),
// then turned into gRPC server credentials and a Boost.Asio SSL context.
#pragma once

#include <grpc/grpc_security.h>

#include <boost/asio/ssl/context.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "accel/common/status.h"

namespace tessera {

struct TlsFiles {
  std::filesystem::path cert;       // PEM certificate chain, the server's own first
  std::filesystem::path key;        // PEM private key of that certificate
  std::filesystem::path client_ca;  // PEM CA bundle; set: clients must present a certificate it signed
};

// The checked contents of the files.
struct TlsMaterial {
  std::string cert_chain_pem;
  std::string key_pem;
  std::string client_ca_pem;  // empty: no client certificates asked for
  bool mutual() const { return !client_ca_pem.empty(); }
};

// nullopt when no TLS file is given (plain TCP); an error when only some are, or one is bad.
Result<std::optional<TlsMaterial>> load_tls_material(const TlsFiles& files);

// gRPC core server credentials for `tls` (SSL, asking for client certificates when mutual), or
// plain ones without it; the caller owns the reference (server/auth/grpc_token_credentials.h
// takes it and puts the bearer-token check on it).
grpc_server_credentials* grpc_core_server_credentials(const std::optional<TlsMaterial>& tls);

// A TLS 1.2+ server context with the certificate and key, verifying client certificates
// against the client CA (and refusing clients without one) when it is set.
Result<std::shared_ptr<boost::asio::ssl::context>> make_https_context(const TlsMaterial& tls);

}  // namespace tessera
