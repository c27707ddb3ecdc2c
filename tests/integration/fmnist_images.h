// The Fashion-MNIST test images the make_fmnist_images CTest fixture writes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tessera::testing {

struct FmnistImage {
  std::string stem;  // "00007_6"
  int label = -1;
  std::string label_name;
  std::filesystem::path png;
  std::filesystem::path jpg;
};

// Reads labels.csv of the fixture's directory; the images with both a PNG and a JPEG, in index
// order. Empty when the fixture has not run.
std::vector<FmnistImage> load_fmnist_images();

// The bytes of a file ("" when missing).
std::string read_binary(const std::filesystem::path& path);

// Fashion-MNIST's class names, index order.
const std::vector<std::string>& fmnist_labels();

}  // namespace tessera::testing
