#include "accel/image/image.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "accel/image/decoders.h"

namespace tessera {
namespace {

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic, size_t offset = 0) {
  return bytes.size() >= offset + magic.size() && std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

// Names a few formats we do not accept, so the error says what the caller sent.
const char* guess_other_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return "GIF";
  if (starts_with(bytes, "BM")) return "BMP";
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return "WebP";
  if (starts_with(bytes, {"II*\0", 4}) || starts_with(bytes, {"MM\0*", 4})) return "TIFF";
  if (starts_with(bytes, "ftyp", 4)) return "HEIF/AVIF";
  return nullptr;
}

}  // namespace

ImageFormat detect_image_format(std::span<const uint8_t> bytes) {
  static constexpr uint8_t kJpeg[] = {0xFF, 0xD8, 0xFF};
  static constexpr uint8_t kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= sizeof kJpeg && std::memcmp(bytes.data(), kJpeg, sizeof kJpeg) == 0) {
    return ImageFormat::kJpeg;
  }
  if (bytes.size() >= sizeof kPng && std::memcmp(bytes.data(), kPng, sizeof kPng) == 0) {
    return ImageFormat::kPng;
  }
  return ImageFormat::kUnknown;
}

Result<Image> decode_image(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits) {
  if (want_channels != 1 && want_channels != 3) {
    return Status::invalid_argument("decode_image: want_channels must be 1 or 3, got " + std::to_string(want_channels));
  }
  if (bytes.empty()) return Status::invalid_argument("empty image data");
  if (static_cast<int64_t>(bytes.size()) > limits.max_bytes) {
    return Status::invalid_argument("image data is " + std::to_string(bytes.size()) + " bytes; the limit is " +
                                    std::to_string(limits.max_bytes) + " bytes");
  }
  switch (detect_image_format(bytes)) {
    case ImageFormat::kJpeg: return image_internal::decode_jpeg(bytes, want_channels, limits);
    case ImageFormat::kPng: return image_internal::decode_png(bytes, want_channels, limits);
    case ImageFormat::kUnknown: break;
  }
  std::string message = "not a JPEG or PNG image";
  if (const char* other = guess_other_format(bytes)) {
    message += std::string(" (looks like ") + other + "; only JPEG and PNG are accepted)";
  }
  return Status::invalid_argument(message);
}

namespace image_internal {

Status check_dimensions(const char* format, int64_t width, int64_t height, const DecodeLimits& limits) {
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  if (width <= 0 || height <= 0) {
    return Status::invalid_argument(std::string(format) + " image has invalid dimensions " + size);
  }
  if (width > limits.max_side || height > limits.max_side) {
    return Status::invalid_argument(std::string(format) + " image is " + size + " pixels; the limit is " +
                                    std::to_string(limits.max_side) + " pixels per side");
  }
  if (width * height > limits.max_pixels) {
    return Status::invalid_argument(std::string(format) + " image is " + size + " = " + std::to_string(width * height) +
                                    " pixels; the limit is " + std::to_string(limits.max_pixels) + " pixels");
  }
  return Status::ok();
}

Status check_png_cost(int64_t width, int64_t height, size_t encoded_bytes, const DecodeLimits& limits) {
  const int64_t target = int64_t{limits.target_width} * limits.target_height;
  if (target <= 0) return Status::ok();
  const int64_t pixels = width * height;
  const double ratio = static_cast<double>(pixels) / static_cast<double>(target);
  const double per_byte = static_cast<double>(pixels) / static_cast<double>(std::max<size_t>(encoded_bytes, 1));
  if (ratio <= limits.max_pixel_ratio || per_byte <= limits.max_png_pixels_per_byte) return Status::ok();
  char figures[160];
  std::snprintf(figures, sizeof figures, "%.0f times the model's %dx%d input, %.0f pixels per encoded byte", ratio,
                limits.target_width, limits.target_height, per_byte);
  char limit[160];
  std::snprintf(limit, sizeof limit, "over %.0f times the input, a PNG may hold at most %.0f pixels per byte",
                limits.max_pixel_ratio, limits.max_png_pixels_per_byte);
  return Status::invalid_argument("PNG image is " + std::to_string(width) + "x" + std::to_string(height) + " (" +
                                  figures + "); the limit: " + limit +
                                  " (--max-image-pixel-ratio, --max-png-pixels-per-byte). Send it scaled down");
}

}  // namespace image_internal
}  // namespace tessera
