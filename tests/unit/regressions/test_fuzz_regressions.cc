// The inputs the fuzz targets (tests/fuzz) crashed on, each answered cleanly now. The raw crash
// files are in tests/fuzz/corpus/<target>/, which the fuzz smoke run (ctest -L fuzz) replays
// under ASan + UBSan; these tests pin the behaviour in the normal build.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "accel/device/emu/emu_device.h"
#include "accel/device/emu/emu_program_check.h"
#include "accel/graph/tensor.h"
#include "accel/import/caffe/caffe_importer.h"
#include "accel/import/onnx/onnx_importer.h"
#include "accel/runtime/model_config.h"
#include "server/kserve/decode_json.h"
#include "tests/fuzz/emu_program_bytes.h"
#include "tests/unit/server/kserve/kserve_codec_test_support.h"

namespace tessera {
namespace {

// A crash input as committed in tests/fuzz/corpus/<target>/<name>.
std::string crash_input(const std::string& target, const std::string& name) {
  const auto path = std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/fuzz/corpus" / target / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A model folder holding `toml` as its model.toml, a labels file and an empty calibration folder.
std::filesystem::path model_folder(const std::string& toml) {
  auto dir = std::filesystem::path(::testing::TempDir()) /
             ("fuzz-model-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::filesystem::create_directories(dir / "calibration");
  std::ofstream(dir / "labels.txt") << "a\nb\nc\n";
  std::ofstream(dir / "model.toml", std::ios::binary | std::ios::trunc) << toml;
  return dir;
}

// A program of one layer in a 4 KiB arena, for the descriptor checks.
CompiledProgram one_layer_program(const abi::LayerDesc& layer) {
  CompiledProgram program;
  program.header.magic = abi::kProgramMagic;
  program.header.version = abi::kAbiVersion;
  program.header.layer_count = 1;
  program.header.arena_image_bytes = 4096;
  program.layers.push_back(layer);
  return program;
}

// fuzz_caffe_import, blob-shape-overflow: a caffemodel blob whose dims multiply past int64
// (UBSan: signed overflow in shape_elements). The count saturates now and the blob is refused.
TEST(FuzzRegressions, CaffeBlobWhoseShapeOverflowsIsRefused) {
  const std::string input = crash_input("fuzz_caffe_import", "blob-shape-overflow");
  constexpr std::string_view kSeparator = "#CAFFEMODEL\n";
  const size_t split = input.find(kSeparator);
  ASSERT_NE(split, std::string::npos);
  const std::string caffemodel = input.substr(split + kSeparator.size());
  const auto bytes = std::span(reinterpret_cast<const uint8_t*>(caffemodel.data()), caffemodel.size());
  EXPECT_FALSE(import_caffe(input.substr(0, split), bytes).is_ok());
  EXPECT_FALSE(parse_caffe_mean(bytes).is_ok());
  EXPECT_EQ(shape_elements({int64_t{1} << 60, 8}), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(shape_elements({int64_t{1} << 60, 0, 8}), 0);
}

// fuzz_onnx_import, raw-data-count-overflow: an initializer whose dims multiply past int64 (the
// count saturates) and whose raw_data was checked as count * sizeof(float) (UBSan: signed
// overflow in read_raw). The sizes are compared in elements now and the model is refused.
TEST(FuzzRegressions, OnnxRawDataWhoseCountOverflowsIsRefused) {
  const std::string input = crash_input("fuzz_onnx_import", "raw-data-count-overflow");
  const auto graph = import_onnx(std::span(reinterpret_cast<const uint8_t*>(input.data()), input.size()));
  EXPECT_FALSE(graph.is_ok());
}

// fuzz_kserve_json, number-out-of-range.json: a number past double's range ("1e30828") made
// nlohmann::json throw out_of_range, which only parse_error was caught for: the exception left
// the HTTP route and ended tesserad. Now it is INVALID_ARGUMENT like any malformed body.
TEST(FuzzRegressions, KserveJsonNumberOutOfRangeIsInvalidArgument) {
  const std::string body = crash_input("fuzz_kserve_json", "number-out-of-range.json");
  const auto decoded = kserve::decode_infer_request_body(body, kserve::codec_test::test_model());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << decoded.status().to_string();
  const auto small =
      kserve::decode_infer_request_body(R"({"inputs": [{"shape": [1e400]}]})", kserve::codec_test::test_model());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument) << small.status().to_string();
}

// fuzz_emu_program, empty-program: a program without layers or tensors. run() memcpy'd zero
// bytes from the null data() of the empty input buffer (UBSan: null pointer passed to memcpy).
TEST(FuzzRegressions, EmuRunsAnEmptyProgramWithoutTouchingMemory) {
  CompiledProgram program;
  program.header.magic = abi::kProgramMagic;
  program.header.version = abi::kAbiVersion;
  EmuDevice device("zcu102", EmuDeviceOptions{.threads = 1, .portable = true});
  auto loaded = device.load(program, 1);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  std::vector<int8_t> none;
  EXPECT_TRUE(loaded.value()->run(none, 1, none, std::chrono::milliseconds(1000)).is_ok());
}

// fuzz_emu_program, pool-stride-overflow: a pool layer of one-row tiles (so abi::layer_fits's
// tile window stays small) with a stride near 2^31: the emulator's window start, output index *
// stride - pad, overflowed int32 (UBSan). The validator refuses such strides, pads and windows now.
TEST(FuzzRegressions, PoolWhoseWindowArithmeticOverflowsIsRefused) {
  abi::LayerDesc pool{};
  pool.op = abi::kOpPool;
  pool.pool_kind = abi::kPoolMax;
  pool.in_c = pool.out_c = 1;
  pool.in_channels_total = pool.out_channels_total = 1;
  pool.in_h = pool.in_w = 4;
  pool.out_h = 2;
  pool.out_w = 1;
  pool.pool_h = pool.pool_w = 2;
  pool.pool_stride_h = (1u << 31) - 1;
  pool.pool_stride_w = 1;
  pool.tile_m = pool.tile_r = pool.tile_c = pool.tile_n = 1;
  pool.act_lo = -128;
  pool.act_hi = 127;
  ASSERT_TRUE(abi::layer_fits(pool)) << "the limits alone let it through; the window check must refuse it";

  CompiledProgram program = one_layer_program(pool);
  const Status status = emu::check_program(program);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.to_string();
  EXPECT_NE(status.message().find("int32"), std::string::npos) << status.to_string();
  pool.pool_stride_h = 2;
  program.layers[0] = pool;
  EXPECT_TRUE(emu::check_program(program).is_ok()) << "the same layer with a real stride is accepted";
}

// fuzz_emu_program, conv-zero-out-channels: a grouped conv with out_c = 0 made abi::layer_fits
// divide by its zero channels per group (UBSan: division by zero). A layer without channels is
// refused now, by the emulator and the kernel alike.
TEST(FuzzRegressions, LayerWithoutChannelsIsRefused) {
  abi::LayerDesc conv{};
  conv.op = abi::kOpConv;
  conv.in_c = 8;
  conv.in_channels_total = 8;
  conv.out_c = 0;
  conv.groups = 2;
  conv.tile_m = conv.tile_r = conv.tile_c = conv.tile_n = 1;
  conv.act_lo = -128;
  conv.act_hi = 127;
  EXPECT_FALSE(abi::layer_fits(conv));

  const CompiledProgram program = one_layer_program(conv);
  const Status status = emu::check_program(program);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.to_string();
}

// fuzz_model_toml, float-height-past-int64: `height = 19223372036854775807.0` (a float past
// int64) was converted to an integer by toml++'s value<int64_t>(), undefined (UBSan). Integer
// settings take integers only now; a float, even a whole one, is refused with the key's name.
TEST(FuzzRegressions, ModelTomlFloatPastInt64IsRefused) {
  const auto crash = load_model_config(model_folder(crash_input("fuzz_model_toml", "float-height-past-int64")));
  ASSERT_FALSE(crash.is_ok());
  EXPECT_NE(crash.status().message().find("input.height"), std::string::npos) << crash.status().message();
  const auto whole =
      load_model_config(model_folder("name = \"s\"\nfile = \"labels.txt\"\n[input]\nwidth = 28\n"
                                     "height = 28.0\nchannels = 1\n"));
  ASSERT_FALSE(whole.is_ok());
  EXPECT_NE(whole.status().message().find("must be an integer"), std::string::npos) << whole.status().message();
}

// fuzz_emu_program, timeout-one-large-layer: one valid conv, legal and merely slow. The emulator
// checked a run's deadline only between layers, so such a run went on past its timeout (libFuzzer
// called the original input, a 10^11-MAC layer of ABI 2, a timeout); now no task of a layer starts
// after the deadline. The committed input, read as the fuzz target reads it, is an 11x11 conv of 64
// channels on 256x256 into one (508 M MACs on the direct path; ~40 ms on two threads here), which
// the fuzz target checks but does not run. Here it runs whole, then under an eighth of that time:
// the answer is DEADLINE_EXCEEDED from inside the layer and the output is untouched. (Relative
// timing: the unit tests also run under qemu, many times slower.)
TEST(FuzzRegressions, OneLargeLayerIsAbandonedAtTheRunTimeout) {
  const std::string bytes = crash_input("fuzz_emu_program", "timeout-one-large-layer");
  const CompiledProgram program =
      fuzz::program_from_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_EQ(program.layers.size(), 1u);
  ASSERT_TRUE(abi::layer_fits(program.layers[0]));
  ASSERT_TRUE(emu::check_program(program).is_ok()) << emu::check_program(program).to_string();

  EmuDevice device("zcu102", EmuDeviceOptions{.threads = 2});
  auto loaded = device.load(program, 1);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  const std::vector<int8_t> input(program.input_bytes(), 1);
  std::vector<int8_t> output(program.output_bytes(), 0x5a);
  using Ms = std::chrono::duration<double, std::milli>;
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(loaded.value()->run(input, 1, output, std::chrono::milliseconds(0)).is_ok());
  const Ms whole = std::chrono::steady_clock::now() - start;
  ASSERT_NE(std::count(output.begin(), output.end(), 0x5a), static_cast<std::ptrdiff_t>(output.size()));

  std::fill(output.begin(), output.end(), 0x5a);
  const auto timeout =
      std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(whole / 8));
  start = std::chrono::steady_clock::now();
  const Status status = loaded.value()->run(input, 1, output, timeout);
  std::printf("[ deadline ] whole layer %.0f ms; under a %lld ms timeout answered after %.0f ms: %s\n", whole.count(),
              static_cast<long long>(timeout.count()), Ms(std::chrono::steady_clock::now() - start).count(),
              status.to_string().c_str());
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.to_string();
  EXPECT_NE(status.message().find("in layer 0 (abandoned mid-layer)"), std::string::npos) << status.to_string();
  EXPECT_EQ(std::count(output.begin(), output.end(), 0x5a), static_cast<std::ptrdiff_t>(output.size()))
      << "an abandoned run must not write its output";
}

}  // namespace
}  // namespace tessera
