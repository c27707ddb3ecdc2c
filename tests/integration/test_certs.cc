#include "tests/integration/test_certs.h"

#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include "tests/integration/subprocess.h"

namespace tessera::testing {

namespace fs = std::filesystem;

TestCerts::TestCerts() {
  dir_ = fs::temp_directory_path() /
         ("tessera-certs-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir_);
  if (!fs::exists(kOpensslPath)) {
    error_ = std::string(kOpensslPath) + " missing (Debian package openssl)";
    return;
  }
  std::ofstream(dir_ / "server.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                                        "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n";
  std::ofstream(dir_ / "client.ext") << "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
                                        "extendedKeyUsage=clientAuth\n";
  ok_ = make_ca("ca") && make_leaf("server", "ca", "/CN=localhost", "server.ext") &&
        make_leaf("client", "ca", "/CN=tessera-test-client", "client.ext") && make_ca("other-ca") &&
        make_leaf("other-client", "other-ca", "/CN=tessera-untrusted-client", "client.ext");
}

TestCerts::~TestCerts() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<std::string> TestCerts::daemon_args(bool mutual) const {
  std::vector<std::string> args = {"--tls-cert", server_cert().string(), "--tls-key", server_key().string()};
  if (mutual) {
    args.emplace_back("--tls-client-ca");
    args.emplace_back(ca().string());
  }
  return args;
}

bool TestCerts::openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kOpensslPath};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessOutput out = run_process(argv, std::chrono::milliseconds(30000));
  if (out.exit_status == 0) return true;
  error_ = "openssl";
  for (const auto& a : args) error_ += " " + a;
  error_ += " failed (" + std::to_string(out.exit_status) + "): " + out.err;
  return false;
}

bool TestCerts::make_ca(const std::string& name) {
  const std::string base = (dir_ / name).string();
  return openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                  base + ".key", "-out", base + ".pem", "-days", "2", "-subj", "/CN=tessera test " + name});
}

bool TestCerts::make_leaf(const std::string& name, const std::string& ca, const std::string& subject,
                          const std::string& ext) {
  const std::string base = (dir_ / name).string();
  const std::string ca_base = (dir_ / ca).string();
  return openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                  base + ".key", "-out", base + ".csr", "-subj", subject}) &&
         openssl({"x509", "-req", "-in", base + ".csr", "-CA", ca_base + ".pem", "-CAkey", ca_base + ".key",
                  "-CAcreateserial", "-out", base + ".pem", "-days", "2", "-extfile", (dir_ / ext).string()});
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tessera::testing
