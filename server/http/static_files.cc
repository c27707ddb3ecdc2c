#include "server/http/static_files.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>

#include "server/http/url.h"

namespace tessera {
namespace fs = std::filesystem;
namespace {

// True when `path` is `root` or inside it (both canonical).
bool is_within(const fs::path& root, const fs::path& path) {
  return std::mismatch(root.begin(), root.end(), path.begin(), path.end()).first == root.end();
}

}  // namespace

Result<fs::path> resolve_static_file(const fs::path& root, std::string_view url_path) {
  auto decoded = percent_decode(url_path);
  if (!decoded) return Status::invalid_argument("malformed path");
  if (decoded->find('\\') != std::string::npos) return Status::invalid_argument("backslash in path");

  fs::path relative;
  std::string_view rest = *decoded;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") return Status::invalid_argument("'..' in path");
    if (segment.front() == '.') return Status::not_found("no such file");
    relative /= std::string(segment);
  }

  std::error_code ec;
  const fs::path canonical_root = fs::canonical(root, ec);
  if (ec) return Status::not_found("the web root " + root.string() + " does not exist");
  fs::path file = canonical_root / relative;
  if (fs::is_directory(file, ec)) file /= "index.html";
  file = fs::canonical(file, ec);
  if (ec || !is_within(canonical_root, file) || !fs::is_regular_file(file, ec)) {
    return Status::not_found("no such file");
  }
  return file;
}

std::string_view content_type_for(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".html" || ext == ".htm") return "text/html; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".txt" || ext == ".md") return "text/plain; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
  if (ext == ".gif") return "image/gif";
  if (ext == ".webp") return "image/webp";
  if (ext == ".ico") return "image/vnd.microsoft.icon";
  if (ext == ".wasm") return "application/wasm";
  if (ext == ".woff2") return "font/woff2";
  return "application/octet-stream";
}

Result<std::string> read_whole_file(const fs::path& file, int64_t max_bytes) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return Status::internal("cannot stat " + file.string() + ": " + ec.message());
  if (static_cast<int64_t>(size) > max_bytes) {
    return Status::failed_precondition(file.filename().string() + " is larger than " + std::to_string(max_bytes) +
                                       " bytes");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::internal("cannot open " + file.string());
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::internal("cannot read " + file.string());
  return data;
}

}  // namespace tessera
