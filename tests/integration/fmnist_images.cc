#include "tests/integration/fmnist_images.h"

#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

namespace tessera::testing {

std::vector<FmnistImage> load_fmnist_images() {
  const std::filesystem::path dir = TESSERA_FMNIST_DIR;
  std::ifstream csv(dir / "labels.csv");
  std::map<std::string, FmnistImage> by_stem;
  std::string line;
  std::getline(csv, line);  // header: file,label_index,label_name
  while (std::getline(csv, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::stringstream fields(line);
    std::string file, index, name;
    std::getline(fields, file, ',');
    std::getline(fields, index, ',');
    std::getline(fields, name);  // the rest: labels hold no commas, but keep them whole anyway
    if (name.size() >= 2 && name.front() == '"') name = name.substr(1, name.size() - 2);
    const std::filesystem::path path = dir / file;
    FmnistImage& image = by_stem[path.stem().string()];
    image.stem = path.stem().string();
    image.label = std::stoi(index);
    image.label_name = name;
    (path.extension() == ".png" ? image.png : image.jpg) = path;
  }
  std::vector<FmnistImage> out;
  for (auto& [stem, image] : by_stem) {
    if (!image.png.empty() && !image.jpg.empty()) out.push_back(image);
  }
  return out;
}

std::string read_binary(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::vector<std::string>& fmnist_labels() {
  static const std::vector<std::string> labels = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return labels;
}

}  // namespace tessera::testing
