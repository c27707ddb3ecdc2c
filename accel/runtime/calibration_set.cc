#include "accel/runtime/calibration_set.h"

#include <algorithm>
#include <fstream>

#include "accel/image/image.h"
#include "accel/image/preprocess.h"

namespace tessera {

Result<std::vector<Tensor>> load_calibration_set(const ModelConfig& config) {
  const auto& dir = config.quantization.calibration_dir;
  if (dir.empty()) {
    return Status::failed_precondition("model '" + config.name +
                                       "': int8 needs calibration images; add [quantization] calibration = "
                                       "\"FOLDER\" to model.toml");
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (entry.is_regular_file() && (ext == ".png" || ext == ".jpg" || ext == ".jpeg")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.size() > static_cast<size_t>(config.quantization.max_images)) {
    files.resize(static_cast<size_t>(config.quantization.max_images));
  }
  if (files.empty())
    return Status::failed_precondition("calibration folder " + dir.string() + " holds no JPEG/PNG image");

  const PreprocessConfig& in = config.input;
  const int64_t per_image = static_cast<int64_t>(in.channels) * in.height * in.width;
  constexpr size_t kBatch = 32;
  std::vector<Tensor> batches;
  for (size_t start = 0; start < files.size(); start += kBatch) {
    const size_t n = std::min(kBatch, files.size() - start);
    Tensor batch({static_cast<int64_t>(n), in.channels, in.height, in.width});
    for (size_t i = 0; i < n; ++i) {
      const auto& path = files[start + i];
      std::ifstream f(path, std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      auto image = decode_image(bytes, in.channels);
      if (!image)
        return Status::invalid_argument("calibration image " + path.string() + ": " + image.status().message());
      TESSERA_RETURN_IF_ERROR(preprocess_into(*image, in, batch.ptr() + static_cast<int64_t>(i) * per_image));
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

}  // namespace tessera
