// JPEG decoding with the TurboJPEG API (libjpeg-turbo 2.1).
#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "accel/image/decoders.h"

namespace tessera::image_internal {
namespace {

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjDecompressor = std::unique_ptr<void, TjDeleter>;

bool contains_ignoring_case(std::string text, const std::string& needle) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text.find(needle) != std::string::npos;
}

}  // namespace

// Truncated data is rejected, not decoded into a half-grey image: libjpeg reports a premature
// end of data only as a warning ("Premature end of JPEG file", or "premature end of data
// segment" when a later marker cuts a scan short), so the first decode stops on warnings.
// Other warnings (stray bytes before a marker, a bad Huffman code) leave a complete image and
// are accepted, as other decoders do; a second decode then runs to the end.
Result<Image> decode_jpeg(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits) {
  TjDecompressor handle(tjInitDecompress());
  if (!handle) return Status::internal(std::string("tjInitDecompress: ") + tjGetErrorStr2(nullptr));
  tjhandle tj = handle.get();
  const unsigned char* data = bytes.data();
  const auto size = static_cast<unsigned long>(bytes.size());

  // A header warning still fills in the dimensions and a fatal error leaves them 0 (TurboJPEG
  // 2.1 may label a fatal error that follows a warning as a warning, so the dimensions decide).
  // A header cut off before the first scan returns 0 without dimensions.
  int width = 0, height = 0, subsampling = -1, colorspace = -1;
  if (tjDecompressHeader3(tj, data, size, &width, &height, &subsampling, &colorspace) != 0 &&
      (width <= 0 || height <= 0)) {
    return Status::invalid_argument(std::string("corrupt JPEG: ") + tjGetErrorStr2(tj));
  }
  if (width <= 0 || height <= 0) {
    return Status::invalid_argument("corrupt JPEG: no image data before the end (truncated header?)");
  }
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    return Status::invalid_argument("unsupported JPEG colour space CMYK; send an RGB or grayscale JPEG");
  }
  TESSERA_RETURN_IF_ERROR(check_dimensions("JPEG", width, height, limits));

  // The DCT scale: libjpeg-turbo decodes straight to the smaller size, skipping most of the work.
  const JpegScale scale = jpeg_scale_for(width, height, limits);
  const tjscalingfactor factor{scale.num, scale.denom};
  width = TJSCALED(width, factor);
  height = TJSCALED(height, factor);
  Image image;
  image.width = width;
  image.height = height;
  image.channels = want_channels;
  image.pixels.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * static_cast<size_t>(want_channels));
  // TJPF_GRAY gives a colour JPEG's own luma channel (Y, BT.601 luma of the encoder's RGB).
  const int pixel_format = want_channels == 1 ? TJPF_GRAY : TJPF_RGB;
  auto decompress = [&](int flags) {
    return tjDecompress2(tj, data, size, image.pixels.data(), width, 0, height, pixel_format,
                         flags | TJFLAG_LIMITSCANS);
  };

  if (decompress(TJFLAG_STOPONWARNING) == 0) return image;
  const std::string first = tjGetErrorStr2(tj);
  if (tjGetErrorCode(tj) == TJERR_FATAL) return Status::invalid_argument("corrupt JPEG: " + first);
  if (contains_ignoring_case(first, "premature end")) {
    return Status::invalid_argument("truncated JPEG: " + first);
  }
  // Only the first warning's text is kept, and an error overwrites it: an unchanged message
  // means the decode ran to the end. (A truncation after another warning is not visible here.)
  if (decompress(0) == 0) return image;
  const std::string second = tjGetErrorStr2(tj);
  if (second != first) return Status::invalid_argument("corrupt JPEG: " + second);
  return image;
}

JpegScale jpeg_scale_for(int width, int height, const DecodeLimits& limits) {
  JpegScale best;
  if (limits.target_width <= 0 || limits.target_height <= 0) return best;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  for (int i = 0; factors != nullptr && i < count; ++i) {
    const tjscalingfactor f = factors[i];
    // 1/2, 1/4, 1/8 only: libjpeg-turbo's SIMD scales; an image under twice the input keeps its pixels.
    if (f.num != 1 || f.denom == 1) continue;
    if (TJSCALED(width, f) < limits.target_width || TJSCALED(height, f) < limits.target_height) continue;
    // Smaller than the best so far: num/denom < best.num/best.denom.
    if (int64_t{f.num} * best.denom < int64_t{best.num} * f.denom) best = {f.num, f.denom};
  }
  return best;
}

}  // namespace tessera::image_internal
