// The Caffe importer (accel/import/caffe): deploy.prototxt (text) and .caffemodel (binary). The
// input is the prototxt, the separator line "#CAFFEMODEL\n", then the caffemodel; the caffemodel
// bytes are also read as a mean.binaryproto.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "accel/import/caffe/caffe_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr std::string_view kSeparator = "#CAFFEMODEL\n";
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find(kSeparator);
  const std::string_view prototxt = input.substr(0, split);
  std::span<const uint8_t> caffemodel;
  if (split != std::string_view::npos) {
    const size_t start = split + kSeparator.size();
    caffemodel = std::span<const uint8_t>(data + start, size - start);
  }
  (void)tessera::import_caffe(prototxt, caffemodel);
  (void)tessera::parse_caffe_mean(caffemodel);
  return 0;
}
