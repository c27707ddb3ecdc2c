#include "server/batching/inference_job.h"

namespace tessera {

size_t input_bytes(const JobInput& input) {
  struct Bytes {
    size_t operator()(const EncodedImage& image) const { return image.bytes.size(); }
    size_t operator()(const InputTensor& tensor) const { return tensor.values.size() * sizeof(float); }
    size_t operator()(const DecodedPixels& pixels) const { return pixels.image ? pixels.image->pixels.size() : 0; }
  };
  return std::visit(Bytes{}, input);
}

}  // namespace tessera
