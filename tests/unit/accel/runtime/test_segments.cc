// The partition into many fabric and host segments, end to end on the emulator: a small residual
// net with an LRN (a host op) in the middle runs fabric -> host -> fabric -> host; extra cuts
// between fabric layers (PartitionOptions::split_before) give the same int8 bytes, so the same
// logits to the bit, since a tensor handed from one fabric segment to the next keeps its scale
// and int8 -> float -> int8 at one scale is exact; a fabric layer moved to the host
// (PartitionOptions::host_only) runs in float there, so that split is held to the int8 path's
// agreement with fp32 instead; the plan charges every hand-over's DDR round trip; and the
// pipeline between batches still overlaps (a batch's host segment runs while the next batch's
// first fabric segment is on the device), shown by the order of events, not by timing.
#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <cmath>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "accel/device/device_registry.h"
#include "accel/runtime/engine.h"
#include "onnx.pb.h"

namespace tessera {
namespace {

using tessera::onnx::AttributeProto;
using tessera::onnx::ModelProto;
using tessera::onnx::NodeProto;
using tessera::onnx::TensorProto;

constexpr int kClasses = 10;

class OnnxWriter {
 public:
  OnnxWriter() {
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(13);
    model_.mutable_graph()->set_name("segments");
  }
  void io(const std::string& in, const std::vector<int64_t>& dims, const std::string& out) {
    auto* v = model_.mutable_graph()->add_input();
    v->set_name(in);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(TensorProto::FLOAT);
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = tt->mutable_shape()->add_dim();
      if (i == 0) {
        d->set_dim_param("N");
      } else {
        d->set_dim_value(dims[i]);
      }
    }
    auto* o = model_.mutable_graph()->add_output();
    o->set_name(out);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  }
  // Random weights, He-scaled by the fan-in (dims[1..]).
  void weights(const std::string& name, const std::vector<int64_t>& dims) {
    int64_t fan_in = 1, count = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      count *= dims[i];
      if (i > 0) fan_in *= dims[i];
    }
    std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
    std::vector<float> values(static_cast<size_t>(count));
    for (float& v : values) v = dims.size() == 1 ? 0.1f * normal(rng_) : normal(rng_);
    TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  }
  NodeProto* node(const std::string& name, const std::string& op, const std::vector<std::string>& in,
                  const std::string& out) {
    NodeProto* n = model_.mutable_graph()->add_node();
    n->set_name(name);
    n->set_op_type(op);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  // conv 3x3 'same' (stride 1 or 2) with bias, optionally followed by a ReLU named name + "_relu".
  std::string conv(const std::string& name, const std::string& in, int64_t c_in, int64_t c_out, int64_t stride,
                   bool relu) {
    weights(name + "_w", {c_out, c_in, 3, 3});
    weights(name + "_b", {c_out});
    NodeProto* n = node(name, "Conv", {in, name + "_w", name + "_b"}, name);
    ints(n, "kernel_shape", {3, 3});
    ints(n, "pads", {1, 1, 1, 1});
    ints(n, "strides", {stride, stride});
    if (!relu) return name;
    node(name + "_relu", "Relu", {name}, name + "_r");
    return name + "_r";
  }
  static void ints(NodeProto* n, const std::string& name, const std::vector<int64_t>& values) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void attr(NodeProto* n, const std::string& name, float f) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::FLOAT);
    a->set_f(f);
  }
  static void attr(NodeProto* n, const std::string& name, int64_t i) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INT);
    a->set_i(i);
  }
  void save(const std::filesystem::path& file) const {
    std::ofstream out(file, std::ios::binary);
    out << model_.SerializeAsString();
  }

 private:
  ModelProto model_;
  std::mt19937 rng_{36};
};

// x [N,3,16,16] -> conv1+relu -> residual block (b1a+relu, b1b, add, relu) -> LRN (host) ->
// conv2 stride 2 + relu -> residual block (b2a, b2b, add, relu) -> global avg pool -> flatten -> fc.
std::filesystem::path write_model() {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tessera_segments_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  OnnxWriter w;
  w.io("x", {-1, 3, 16, 16}, "logits");
  const std::string r1 = w.conv("conv1", "x", 3, 8, 1, true);
  const std::string a1 = w.conv("b1a", r1, 8, 8, 1, true);
  const std::string b1 = w.conv("b1b", a1, 8, 8, 1, false);
  w.node("b1_add", "Add", {r1, b1}, "s1");
  w.node("b1_relu", "Relu", {"s1"}, "r2");
  NodeProto* lrn = w.node("lrn", "LRN", {"r2"}, "l");
  OnnxWriter::attr(lrn, "size", int64_t{5});
  OnnxWriter::attr(lrn, "alpha", 1e-2f);
  OnnxWriter::attr(lrn, "beta", 0.75f);
  OnnxWriter::attr(lrn, "bias", 1.0f);
  const std::string r3 = w.conv("conv2", "l", 8, 16, 2, true);
  const std::string a2 = w.conv("b2a", r3, 16, 16, 1, true);
  const std::string b2 = w.conv("b2b", a2, 16, 16, 1, false);
  w.node("b2_add", "Add", {r3, b2}, "s2");
  w.node("b2_relu", "Relu", {"s2"}, "r4");
  w.node("gap", "GlobalAveragePool", {"r4"}, "g");
  OnnxWriter::attr(w.node("flatten", "Flatten", {"g"}, "f"), "axis", int64_t{1});
  w.weights("fc_w", {kClasses, 16});
  w.weights("fc_b", {kClasses});
  OnnxWriter::attr(w.node("fc", "Gemm", {"f", "fc_w", "fc_b"}, "logits"), "transB", int64_t{1});
  w.save(dir / "model.onnx");
  std::ofstream(dir / "model.toml") << "name = \"segments\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n"
                                       "[input]\nwidth = 16\nheight = 16\nchannels = 3\n";
  std::ofstream labels(dir / "labels.txt");
  for (int i = 0; i < kClasses; ++i) labels << "class" << i << "\n";
  return dir;
}

Tensor random_batch(int64_t n, unsigned seed) {
  Tensor t({n, 3, 16, 16});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : t.data) v = normal(rng);
  return t;
}

std::shared_ptr<Device> emulator() {
  DeviceOptions options;
  options.kind = "emu";
  auto device = open_device(options);
  EXPECT_TRUE(device.is_ok()) << device.status().to_string();
  return std::move(device).value();
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

class Segments : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(write_model());
    auto config = load_model_config(*dir_);
    ASSERT_TRUE(config.is_ok()) << config.status().to_string();
    config_ = new ModelConfig(*config);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
    delete dir_;
    delete config_;
  }

  static std::unique_ptr<Engine> load(Precision precision, const plan::PartitionOptions& partition = {},
                                      const std::shared_ptr<Device>& device = nullptr, bool pipelined = true) {
    EngineOptions options;
    options.precision = precision;
    options.device = device ? device : emulator();
    options.calibration_samples = {random_batch(8, 1)};
    options.partition = partition;
    options.pipelined = pipelined;
    options.plan.threads = 1;
    auto engine = Engine::load(*config_, options);
    EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
    return engine.is_ok() ? std::move(engine).value() : nullptr;
  }

  static std::filesystem::path* dir_;
  static ModelConfig* config_;
};

std::filesystem::path* Segments::dir_ = nullptr;
ModelConfig* Segments::config_ = nullptr;

TEST_F(Segments, HostOpInTheMiddleGivesFabricHostFabricHost) {
  auto engine = load(Precision::kInt8);
  ASSERT_TRUE(engine);
  const std::string summary = engine->summary();
  EXPECT_NE(summary.find("9 fabric layers (conv1 .. gap) in 2 segments, 1 hand-over"), std::string::npos) << summary;
  EXPECT_NE(summary.find("host: LRN Flatten Gemm"), std::string::npos) << summary;
  const plan::ModelPlan* plan = engine->plan();
  ASSERT_NE(plan, nullptr);
  // Every layer but the LRN on the fabric: conv1, b1a, b1b, add, conv2, b2a, b2b, add, pool (ReLUs fused).
  EXPECT_EQ(plan->layers.size(), 9u);
  ASSERT_EQ(plan->handovers.size(), 1u);
  const plan::HandoverPlan& h = plan->handovers[0];
  EXPECT_EQ(h.from, "r2");
  EXPECT_EQ(h.to, "l");
  EXPECT_EQ(h.bytes_out, 8u * 16 * 16);
  EXPECT_EQ(h.bytes_in, 8u * 16 * 16);
  EXPECT_GE(h.cost.ddr_bytes, h.bytes_out + h.bytes_in);
  EXPECT_GT(h.cost.total_cycles, 0.0);
  EXPECT_GT(h.cost.energy_uj, 0.0);
  // The plan's totals carry the hand-over.
  double layer_cycles = 0;
  for (const auto& l : plan->layers) layer_cycles += l.cost.total_cycles;
  EXPECT_DOUBLE_EQ(plan->cycles(), layer_cycles + h.cost.total_cycles);
  uint64_t layer_bytes = 0;
  for (const auto& l : plan->layers) layer_bytes += l.cost.ddr_bytes;
  EXPECT_EQ(plan->ddr_bytes(), layer_bytes + h.cost.ddr_bytes);
}

TEST_F(Segments, ExtraFabricCutsGiveTheSameBits) {
  auto whole = load(Precision::kInt8);
  ASSERT_TRUE(whole);
  const Tensor batch = random_batch(5, 7);
  auto reference = whole->infer(batch);
  ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
  // Cuts where one tensor crosses: before block 2, before the pool, and both with another before conv1's block.
  const std::vector<std::set<std::string>> cuts = {{"b2a"}, {"gap"}, {"b1a", "b2a", "gap"}};
  for (const auto& cut : cuts) {
    plan::PartitionOptions options;
    options.split_before = cut;
    auto engine = load(Precision::kInt8, options);
    ASSERT_TRUE(engine);
    const plan::ModelPlan* plan = engine->plan();
    ASSERT_NE(plan, nullptr);
    EXPECT_EQ(plan->layers.size(), 9u) << "every layer stays on the fabric: " << engine->summary();
    EXPECT_EQ(plan->handovers.size(), 1 + cut.size()) << engine->summary();
    EXPECT_GT(plan->cycles(), whole->plan()->cycles()) << "each hand-over costs its round trip";
    auto split = engine->infer(batch);
    ASSERT_TRUE(split.is_ok()) << split.status().to_string();
    ASSERT_EQ(split->scores.size(), reference->scores.size());
    for (size_t i = 0; i < split->scores.size(); ++i) {
      EXPECT_EQ(split->scores[i], reference->scores[i]) << "image " << i << ", " << engine->summary();
    }
  }
}

TEST_F(Segments, FabricLayersMovedToTheHostAgreeAsInt8DoesWithFp32) {
  auto fp32 = load(Precision::kFp32);
  auto whole = load(Precision::kInt8);
  ASSERT_TRUE(fp32 && whole);
  const Tensor batch = random_batch(8, 11);
  auto want = fp32->infer(batch);
  auto base = whole->infer(batch);
  ASSERT_TRUE(want.is_ok() && base.is_ok());
  // b1a's relu output and r1 both cross when the cut falls inside block 1, so b1b and the add go
  // to the host (one tensor can enter a fabric segment); the add alone kept on the host likewise.
  const std::vector<plan::PartitionOptions> variants = {{{"b1_add"}, {}}, {{}, {"b1b"}}, {{"conv2", "b2_add"}, {}}};
  for (const auto& options : variants) {
    auto engine = load(Precision::kInt8, options);
    ASSERT_TRUE(engine);
    EXPECT_LT(engine->plan()->layers.size(), 9u) << engine->summary();
    auto got = engine->infer(batch);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    for (size_t i = 0; i < got->scores.size(); ++i) {
      // The int8 path's own agreement with fp32 (the unsplit run) is the bar, less a margin.
      const double bar = std::min(0.99, cosine(base->scores[i], want->scores[i]) - 0.01);
      EXPECT_GE(cosine(got->scores[i], want->scores[i]), bar) << "image " << i << ", " << engine->summary();
    }
  }
}

// The xrt backend loads one program per fabric segment and gives the emulator's bits. Runs under
// CTest's xrt_emu_unit_tests (unit_tests --gtest_filter=Xrt*, on the software-emulated card of
// kernels/sw_emu/, where it must not skip) and on a board with an xclbin; skips elsewhere.
class XrtSegments : public Segments {};

TEST_F(XrtSegments, EmulatedCardGivesTheEmulatorsBits) {
  DeviceOptions options;
  options.kind = "xrt";
  auto xrt = open_device(options);
  if (!xrt.is_ok()) {
    ASSERT_EQ(std::getenv("TESSERA_XRT_EMU_LIB_DIR"), nullptr) << xrt.status().to_string();
    GTEST_SKIP() << "needs an XRT device: " << xrt.status().to_string();
  }
  auto on_card = load(Precision::kInt8, {}, std::move(xrt).value());
  auto on_emu = load(Precision::kInt8);
  ASSERT_TRUE(on_card && on_emu);
  EXPECT_NE(on_card->summary().find("in 2 segments, 1 hand-over"), std::string::npos) << on_card->summary();
  const Tensor batch = random_batch(3, 21);
  auto got = on_card->infer(batch);
  auto want = on_emu->infer(batch);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_EQ(got->scores, want->scores);
}

// A device whose runs are logged (which program, how many images) and may be held by a hook.
class RecordingDevice : public Device {
 public:
  explicit RecordingDevice(std::shared_ptr<Device> inner) : inner_(std::move(inner)) {}
  DeviceInfo info() const override { return inner_->info(); }
  Result<std::unique_ptr<DeviceProgram>> load(const CompiledProgram& program, uint32_t max_batch) override;

  struct Run {
    int program;
    uint32_t images;
  };
  std::vector<Run> runs() {
    std::lock_guard lock(mu_);
    return runs_;
  }
  // Called as a run starts (on the fabric thread).
  std::function<void(const Run&)> on_run;

  void record(const Run& run) {
    {
      std::lock_guard lock(mu_);
      runs_.push_back(run);
    }
    if (on_run) on_run(run);
  }

 private:
  std::shared_ptr<Device> inner_;
  std::mutex mu_;
  std::vector<Run> runs_;
  int loads_ = 0;
};

class RecordingProgram : public DeviceProgram {
 public:
  RecordingProgram(std::unique_ptr<DeviceProgram> inner, RecordingDevice* device, int index)
      : inner_(std::move(inner)), device_(device), index_(index) {}
  Status run(std::span<const int8_t> inputs, uint32_t batch, std::span<int8_t> outputs,
             std::chrono::milliseconds timeout) override {
    device_->record({index_, batch});
    return inner_->run(inputs, batch, outputs, timeout);
  }
  uint64_t last_run_cycles() const override { return inner_->last_run_cycles(); }

 private:
  std::unique_ptr<DeviceProgram> inner_;
  RecordingDevice* device_;
  int index_;
};

Result<std::unique_ptr<DeviceProgram>> RecordingDevice::load(const CompiledProgram& program, uint32_t max_batch) {
  TESSERA_ASSIGN_OR_RETURN(auto loaded, inner_->load(program, max_batch));
  return std::unique_ptr<DeviceProgram>(std::make_unique<RecordingProgram>(std::move(loaded), this, loads_++));
}

// A one-shot flag a thread can wait for (30 s at most: a hang fails, it does not time anything).
class Flag {
 public:
  void set() {
    {
      std::lock_guard lock(mu_);
      set_ = true;
    }
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

struct CountingListener final : BatchListener {
  std::function<void()> hook;
  int calls = 0;
  void device_free() override {
    ++calls;
    if (hook) hook();
  }
};

// Batch A (1 image) and batch B (2 images), each fabric -> host (LRN) -> fabric -> host. A's
// listener hears that A's first fabric segment is over before A's host segment starts; it waits
// there until B's first fabric segment is on the device, and that run waits until A's listener
// has returned (A's host segment under way). So the device runs A0, B0, then A1 and B1: A's
// host segment overlapped B's fabric segment. Unpipelined, the same calls run A0, A1, B0, B1.
TEST_F(Segments, HostSegmentOverlapsTheNextBatchsFabricSegment) {
  for (const bool pipelined : {true, false}) {
    auto device = std::make_shared<RecordingDevice>(emulator());
    auto engine = load(Precision::kInt8, {}, device, pipelined);
    ASSERT_TRUE(engine);
    Flag b_on_fabric, a_in_host, a_listened;
    device->on_run = [&](const RecordingDevice::Run& run) {
      if (pipelined && run.program == 0 && run.images == 2) {
        b_on_fabric.set();
        EXPECT_TRUE(a_in_host.wait()) << "A's host segment never started while B was on the fabric";
      }
    };
    CountingListener a_listener, b_listener;
    a_listener.hook = [&] {
      a_listened.set();
      if (!pipelined) return;
      EXPECT_TRUE(b_on_fabric.wait()) << "B's first fabric segment never started";
      a_in_host.set();  // A's host segment starts as the listener returns
    };
    std::thread a([&] {
      auto result = engine->infer(random_batch(1, 3), &a_listener);
      EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    });
    ASSERT_TRUE(a_listened.wait());
    std::thread b([&] {
      auto result = engine->infer(random_batch(2, 4), &b_listener);
      EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    });
    a.join();
    b.join();
    EXPECT_EQ(a_listener.calls, 1);
    EXPECT_EQ(b_listener.calls, 1);
    std::vector<std::pair<int, uint32_t>> order;
    for (const auto& run : device->runs()) order.emplace_back(run.program, run.images);
    ASSERT_EQ(order.size(), 4u);
    if (pipelined) {
      // A0, then B0 (while A was between its fabric segments), then A1 and B1 in either order.
      EXPECT_EQ(order[0], std::make_pair(0, 1u));
      EXPECT_EQ(order[1], std::make_pair(0, 2u));
      using Runs = std::set<std::pair<int, uint32_t>>;
      const Runs last(order.begin() + 2, order.end());
      const Runs want = {{1, 1u}, {1, 2u}};
      EXPECT_EQ(last, want);
    } else {
      const std::vector<std::pair<int, uint32_t>> serial = {{0, 1u}, {1, 1u}, {0, 2u}, {1, 2u}};
      EXPECT_EQ(order, serial);
    }
  }
}

}  // namespace
}  // namespace tessera
