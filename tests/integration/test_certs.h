// Certificates for the TLS tests, made with the openssl CLI into a temporary directory: a CA, a
// server certificate for localhost / 127.0.0.1 and a client certificate signed by it, and a
// second CA with a client certificate of its own (which the first CA does not vouch for).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tessera::testing {

constexpr const char* kOpensslPath = "/usr/bin/openssl";

class TestCerts {
 public:
  TestCerts();   // makes them; ok() says whether that worked
  ~TestCerts();  // removes the directory

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::filesystem::path& dir() const { return dir_; }

  std::filesystem::path ca() const { return dir_ / "ca.pem"; }
  std::filesystem::path server_cert() const { return dir_ / "server.pem"; }
  std::filesystem::path server_key() const { return dir_ / "server.key"; }
  std::filesystem::path client_cert() const { return dir_ / "client.pem"; }
  std::filesystem::path client_key() const { return dir_ / "client.key"; }
  std::filesystem::path other_client_cert() const { return dir_ / "other-client.pem"; }
  std::filesystem::path other_client_key() const { return dir_ / "other-client.key"; }

  // The daemon flags for TLS with these certificates (plus the client CA when `mutual`).
  std::vector<std::string> daemon_args(bool mutual = false) const;

 private:
  bool openssl(const std::vector<std::string>& args);
  bool make_ca(const std::string& name);
  bool make_leaf(const std::string& name, const std::string& ca, const std::string& subject, const std::string& ext);

  std::filesystem::path dir_;
  bool ok_ = false;
  std::string error_;
};

// The bytes of a file ("" when missing).
std::string read_file(const std::filesystem::path& path);

}  // namespace tessera::testing
