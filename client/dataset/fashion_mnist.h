// Fashion-MNIST in its IDX files (Debian's dataset-fashion-mnist package): images as decoded
// 28x28 grayscale Images, so evaluation preprocesses them exactly as the daemon does requests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/image/image.h"

namespace tessera::client {

inline const std::filesystem::path kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct LabelledImages {
  std::vector<Image> images;
  std::vector<int> labels;
};

// Reads `split` ("t10k" or "train") from DIR/{split}-images-idx3-ubyte(.gz) and
// DIR/{split}-labels-idx1-ubyte(.gz). Errors name the file and what is wrong with it.
Result<LabelledImages> load_fashion_mnist(const std::filesystem::path& dir, const std::string& split);

}  // namespace tessera::client
