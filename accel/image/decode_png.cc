// PNG decoding with libspng.
#include <spng.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "accel/image/decoders.h"
#include "accel/image/pixel_convert.h"

namespace tessera::image_internal {
namespace {

struct SpngDeleter {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
using SpngContext = std::unique_ptr<spng_ctx, SpngDeleter>;

// Memory spng may spend on ancillary chunks (text, ICC profiles, decompressed zTXt/iCCP).
constexpr size_t kChunkCacheLimit = 16u << 20;

Status png_error(int error) {
  const std::string what = spng_strerror(error);
  if (error == SPNG_IO_EOF || error == SPNG_EOF)
    return Status::invalid_argument("truncated PNG: the data ends early (" + what + ")");
  return Status::invalid_argument("corrupt PNG: " + what);
}

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

// Decodes through one of spng's 8-bit formats: G8 (gray up to 8 bits), RGB8 (colour, palette,
// 16-bit gray) or RGBA8 (an alpha channel or a tRNS chunk). 16-bit samples keep their high
// byte, as libpng's strip_16 and PIL do. Transparent pixels are composited onto white: that is
// what a browser shows, and kAuto inversion then treats a cut-out like a photo on a light
// background. Rows are converted to want_channels as they are decoded (interlaced images:
// after the last pass).
// Gamma (gAMA) and ICC profiles are ignored.
Result<Image> decode_png(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits) {
  SpngContext context(spng_ctx_new(0));
  if (!context) return Status::internal("spng_ctx_new failed");
  spng_ctx* ctx = context.get();
  const auto side = static_cast<uint32_t>(std::clamp<int64_t>(limits.max_side, 1, std::numeric_limits<int32_t>::max()));
  int error = spng_set_png_buffer(ctx, bytes.data(), bytes.size());
  if (error == 0) error = spng_set_image_limits(ctx, side, side);
  if (error == 0) error = spng_set_chunk_limits(ctx, bytes.size(), kChunkCacheLimit);
  if (error != 0) return Status::internal(std::string("spng setup: ") + spng_strerror(error));

  spng_ihdr ihdr{};
  error = spng_get_ihdr(ctx, &ihdr);
  if (error == SPNG_EUSER_WIDTH || error == SPNG_EUSER_HEIGHT) {
    // spng has validated the signature and IHDR, so bytes 16..23 hold width and height.
    Status status = check_dimensions("PNG", read_be32(bytes.data() + 16), read_be32(bytes.data() + 20), limits);
    if (!status.is_ok()) return status;
  }
  if (error != 0) return png_error(error);
  TESSERA_RETURN_IF_ERROR(check_dimensions("PNG", ihdr.width, ihdr.height, limits));
  TESSERA_RETURN_IF_ERROR(check_png_cost(ihdr.width, ihdr.height, bytes.size(), limits));

  spng_trns trns{};
  error = spng_get_trns(ctx, &trns);
  if (error != 0 && error != SPNG_ECHUNKAVAIL) return png_error(error);
  const bool alpha = error == 0 || ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ||
                     ihdr.color_type == SPNG_COLOR_TYPE_TRUECOLOR_ALPHA;
  int format = SPNG_FMT_RGB8;
  int staged_channels = 3;
  if (alpha) {
    format = SPNG_FMT_RGBA8;
    staged_channels = 4;
  } else if (ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth <= 8) {
    format = SPNG_FMT_G8;
    staged_channels = 1;
  }

  const size_t width = ihdr.width;
  const size_t height = ihdr.height;
  Image image;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.channels = want_channels;
  image.pixels.resize(width * height * static_cast<size_t>(want_channels));

  error = spng_decode_image(ctx, nullptr, 0, format, SPNG_DECODE_PROGRESSIVE | (alpha ? SPNG_DECODE_TRNS : 0));
  if (error != 0) return png_error(error);
  const bool direct = staged_channels == want_channels;
  const bool interlaced = ihdr.interlace_method != SPNG_INTERLACE_NONE;
  const size_t out_row = width * static_cast<size_t>(want_channels);
  const size_t staged_row = width * static_cast<size_t>(staged_channels);
  // Interlaced passes revisit rows, so they need the whole staged image.
  std::vector<uint8_t> staging(direct ? 0 : interlaced ? staged_row * height : staged_row);
  spng_row_info row_info{};
  do {
    error = spng_get_row_info(ctx, &row_info);
    if (error != 0) break;
    uint8_t* out = image.pixels.data() + row_info.row_num * out_row;
    uint8_t* row = direct ? out : staging.data() + (interlaced ? row_info.row_num * staged_row : 0);
    error = spng_decode_row(ctx, row, staged_row);
    if (!direct && !interlaced && (error == 0 || error == SPNG_EOI)) {
      convert_pixels(row, staged_channels, out, want_channels, width);
    }
  } while (error == 0);
  if (error != SPNG_EOI) return png_error(error);
  if (!direct && interlaced)
    convert_pixels(staging.data(), staged_channels, image.pixels.data(), want_channels, width * height);

  // The chunks after the image data: checks the last IDAT's CRC and that the file is complete.
  error = spng_decode_chunks(ctx);
  if (error != 0) return png_error(error);
  return image;
}

}  // namespace tessera::image_internal
