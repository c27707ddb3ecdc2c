#include "client/dataset/fashion_mnist.h"

#include <zlib.h>

#include <memory>

namespace tessera::client {
namespace {

// Whole file, gunzipped when it ends in .gz (zlib's gz* reads plain files too).
Result<std::vector<uint8_t>> read_maybe_gzip(const std::filesystem::path& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (!file) return Status::not_found("cannot open " + path.string());
  std::vector<uint8_t> data;
  uint8_t buffer[1 << 16];
  for (;;) {
    const int n = gzread(file.get(), buffer, sizeof(buffer));
    if (n < 0) return Status::invalid_argument(path.string() + ": corrupt gzip data");
    if (n == 0) break;
    data.insert(data.end(), buffer, buffer + n);
  }
  return data;
}

uint32_t big_endian(const std::vector<uint8_t>& d, size_t at) {
  return (uint32_t{d[at]} << 24) | (uint32_t{d[at + 1]} << 16) | (uint32_t{d[at + 2]} << 8) | d[at + 3];
}

std::filesystem::path find(const std::filesystem::path& dir, const std::string& name) {
  const auto gz = dir / (name + ".gz");
  return std::filesystem::exists(gz) ? gz : dir / name;
}

}  // namespace

Result<LabelledImages> load_fashion_mnist(const std::filesystem::path& dir, const std::string& split) {
  if (split != "t10k" && split != "train") return Status::invalid_argument("split must be t10k or train");
  const auto images_path = find(dir, split + "-images-idx3-ubyte");
  const auto labels_path = find(dir, split + "-labels-idx1-ubyte");
  TESSERA_ASSIGN_OR_RETURN(auto images, read_maybe_gzip(images_path));
  TESSERA_ASSIGN_OR_RETURN(auto labels, read_maybe_gzip(labels_path));
  if (images.size() < 16 || big_endian(images, 0) != 0x803) {
    return Status::invalid_argument(images_path.string() + ": not an IDX3 image file");
  }
  if (labels.size() < 8 || big_endian(labels, 0) != 0x801) {
    return Status::invalid_argument(labels_path.string() + ": not an IDX1 label file");
  }
  const uint32_t count = big_endian(images, 4), rows = big_endian(images, 8), cols = big_endian(images, 12);
  if (big_endian(labels, 4) != count || images.size() != 16 + size_t{count} * rows * cols ||
      labels.size() != 8 + size_t{count}) {
    return Status::invalid_argument(images_path.string() + ": sizes of the image and label files disagree");
  }
  LabelledImages out;
  out.images.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    Image img;
    img.width = static_cast<int>(cols);
    img.height = static_cast<int>(rows);
    img.channels = 1;
    const auto first = images.begin() + 16 + static_cast<std::ptrdiff_t>(size_t{i} * rows * cols);
    img.pixels.assign(first, first + static_cast<std::ptrdiff_t>(size_t{rows} * cols));
    out.images.push_back(std::move(img));
    out.labels.push_back(labels[8 + i]);
  }
  return out;
}

}  // namespace tessera::client
