// Power sources and the telemetry sampler: hwmon on a fake sysfs tree, the power model, the
// device's sensors, and the sampler's choice of source, energy integration, logging and stop().
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "accel/device/emu/emu_device.h"
#include "server/telemetry/device_source.h"
#include "server/telemetry/hwmon_source.h"
#include "server/telemetry/model_source.h"
#include "server/telemetry/sampler.h"
#include "tests/unit/server/telemetry/sysfs_temp_dir.h"

namespace tessera::telemetry {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using SteadyTime = std::chrono::steady_clock::time_point;

class TelemetryTempDir : public SysfsTempDir {
 protected:
  // A ZynqMP-like tree: INA226s with power1_input (one garbage), an INA219 with only curr/in, an
  // INA3221, a hwmon that is no power monitor, and two thermal zones.
  void write_board() {
    write("class/hwmon/hwmon0/name", "ina226_u76\n");
    write("class/hwmon/hwmon0/power1_input", "1250000\n");  // 1.25 W
    write("class/hwmon/hwmon0/curr1_input", "500\n");       // same channel: power1 wins
    write("class/hwmon/hwmon0/in0_input", "2\n");           // shunt voltage
    write("class/hwmon/hwmon0/in1_input", "850\n");
    write("class/hwmon/hwmon1/name", "ina219\n");
    write("class/hwmon/hwmon1/curr1_input", "300\n");  // 300 mA x 5000 mV = 1.5 W
    write("class/hwmon/hwmon1/in1_input", "5000\n");
    write("class/hwmon/hwmon1/in1_label", "VCC_5V\n");
    write("class/hwmon/hwmon1/curr2_input", "garbage\n");  // skipped
    write("class/hwmon/hwmon1/in2_input", "1000\n");
    write("class/hwmon/hwmon2/name", "ina226_u79\n");
    write("class/hwmon/hwmon2/power1_input", "n/a\n");  // skipped, no curr1 to fall back on
    write("class/hwmon/hwmon3/name", "cpu_thermal\n");  // not a power monitor
    write("class/hwmon/hwmon3/temp1_input", "45000\n");
    write("class/hwmon/hwmon3/power1_input", "99000000\n");
    write("class/hwmon/hwmon10/name", "ina3221\n");
    write("class/hwmon/hwmon10/curr1_input", "100\n");  // 100 mA x 12000 mV = 1.2 W
    write("class/hwmon/hwmon10/in1_input", "12000\n");
    write("class/hwmon/hwmon10/curr1_label", "VDD_IN\n");
    write("class/hwmon/hwmon10/curr2_input", "250\n");  // 250 mA x 3300 mV = 0.825 W
    write("class/hwmon/hwmon10/in2_input", "3300\n");
    write("class/thermal/thermal_zone0/type", "cpu-thermal\n");
    write("class/thermal/thermal_zone0/temp", "47500\n");
    write("class/thermal/thermal_zone1/type", "ams-ps\n");
    write("class/thermal/thermal_zone1/temp", "52250\n");
  }
};

bool any_contains(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_F(TelemetryTempDir, HwmonSumsRailsAndTakesTheHottestZone) {
  write_board();
  HwmonSource source(HwmonOptions{.root = root_});
  EXPECT_EQ(source.name(), "hwmon");
  auto r = source.read();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->watts.has_value());
  EXPECT_DOUBLE_EQ(*r->watts, 1.25 + 1.5 + 1.2 + 0.825);
  ASSERT_EQ(r->rails_watts.size(), 4u);
  EXPECT_DOUBLE_EQ(r->rails_watts.at("ina226_u76:power1"), 1.25);
  EXPECT_DOUBLE_EQ(r->rails_watts.at("ina219:VCC_5V"), 1.5);
  EXPECT_DOUBLE_EQ(r->rails_watts.at("ina3221:VDD_IN"), 1.2);
  EXPECT_DOUBLE_EQ(r->rails_watts.at("ina3221:curr2"), 0.825);

  ASSERT_TRUE(r->temperature_c.has_value());
  EXPECT_DOUBLE_EQ(*r->temperature_c, 52.25);
  ASSERT_EQ(r->temperatures_c.size(), 2u);
  EXPECT_DOUBLE_EQ(r->temperatures_c.at("cpu-thermal"), 47.5);
  EXPECT_DOUBLE_EQ(r->temperatures_c.at("ams-ps"), 52.25);

  EXPECT_TRUE(any_contains(r->notes, "hwmon1/curr2_input: not a number ('garbage')"))
      << ::testing::PrintToString(r->notes);
  EXPECT_TRUE(any_contains(r->notes, "hwmon2/power1_input: not a number ('n/a')"))
      << ::testing::PrintToString(r->notes);
}

TEST_F(TelemetryTempDir, HwmonFallsBackToCurrentTimesVoltageWhenPowerIsUnreadable) {
  write("class/hwmon/hwmon0/name", "ina226\n");
  write("class/hwmon/hwmon0/power1_input", "???\n");
  write("class/hwmon/hwmon0/curr1_input", "2000\n");
  write("class/hwmon/hwmon0/in1_input", "1000\n");
  auto r = HwmonSource(HwmonOptions{.root = root_}).read();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_DOUBLE_EQ(*r->watts, 2.0);
  EXPECT_DOUBLE_EQ(r->rails_watts.at("ina226:curr1"), 2.0);
  EXPECT_FALSE(r->temperature_c.has_value());
}

TEST_F(TelemetryTempDir, HwmonWithoutPowerMonitorsIsUnsupported) {
  auto empty = HwmonSource(HwmonOptions{.root = root_}).read();
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(empty.status().message().rfind("unsupported: ", 0), 0u) << empty.status().message();

  // A laptop: hwmon and thermal zones, but no power monitor.
  write("class/hwmon/hwmon0/name", "acpitz\n");
  write("class/hwmon/hwmon0/temp1_input", "40000\n");
  write("class/thermal/thermal_zone0/type", "x86_pkg_temp\n");
  write("class/thermal/thermal_zone0/temp", "40000\n");
  auto laptop = HwmonSource(HwmonOptions{.root = root_}).read();
  ASSERT_FALSE(laptop.is_ok());
  EXPECT_EQ(laptop.status().code(), StatusCode::kUnimplemented);

  // ... unless its name is configured as one.
  write("class/hwmon/hwmon0/power1_input", "3000000\n");
  auto configured = HwmonSource(HwmonOptions{.root = root_, .name_prefixes = {"acpi"}}).read();
  ASSERT_TRUE(configured.is_ok()) << configured.status().to_string();
  EXPECT_DOUBLE_EQ(*configured->watts, 3.0);
}

TEST_F(TelemetryTempDir, HwmonWithNothingReadableIsUnavailable) {
  write("class/hwmon/hwmon0/name", "ina226\n");
  write("class/hwmon/hwmon0/power1_input", "garbage\n");
  auto r = HwmonSource(HwmonOptions{.root = root_}).read();
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("garbage"), std::string::npos) << r.status().message();
}

// A steady clock the test moves by hand.
struct FakeClock {
  SteadyTime now{std::chrono::hours(1000)};
  std::function<SteadyTime()> fn() {
    return [this] { return now; };
  }
};

TEST(ModelSource, WattsAreStaticPlusDynamicEnergyRate) {
  FakeClock clock;
  double joules = 0;
  ModelSource source(
      2.0, [&] { return joules; }, clock.fn());
  EXPECT_EQ(source.name(), "model");

  auto first = source.read();  // no interval yet
  ASSERT_TRUE(first.is_ok());
  EXPECT_DOUBLE_EQ(*first->watts, 2.0);
  EXPECT_FALSE(first->temperature_c.has_value());

  clock.now += 2s;
  joules = 3.0;
  EXPECT_DOUBLE_EQ(*source.read()->watts, 2.0 + 1.5);

  clock.now += 1s;  // idle
  EXPECT_DOUBLE_EQ(*source.read()->watts, 2.0);

  clock.now += 500ms;
  joules = 4.0;
  EXPECT_DOUBLE_EQ(*source.read()->watts, 2.0 + 2.0);

  clock.now += 1s;
  joules = 0.5;  // the counter restarted: 0.5 J are new
  EXPECT_DOUBLE_EQ(*source.read()->watts, 2.5);
}

TEST(ModelSource, BadCountersAreUnavailable) {
  FakeClock clock;
  ModelSource throws(
      1.0, []() -> double { throw std::runtime_error("engine gone"); }, clock.fn());
  auto r = throws.read();
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("engine gone"), std::string::npos);

  ModelSource negative(
      1.0, [] { return -1.0; }, clock.fn());
  EXPECT_EQ(negative.read().status().code(), StatusCode::kUnavailable);

  ModelSource none(1.0, nullptr, clock.fn());
  EXPECT_EQ(none.read().status().code(), StatusCode::kUnimplemented);
}

// A device with sensors, for DeviceSource.
class SensorDevice : public Device {
 public:
  DeviceInfo info() const override {
    DeviceInfo info;
    info.kind = "xrt";
    return info;
  }
  Result<std::unique_ptr<DeviceProgram>> load(const CompiledProgram&, uint32_t) override {
    return Status::unimplemented("not in this test");
  }
  Result<DeviceSensors> sample_sensors() const override {
    DeviceSensors s;
    s.power_watts = 24.5;
    s.temperature_c = 61;
    s.rails_watts["12v_pex"] = 18.0;
    s.temperatures_c["fpga0"] = 61;
    s.notes.emplace_back("fpga_hbm: no such key");
    return s;
  }
};

TEST(DeviceSource, PassesTheDevicesSensorsOn) {
  DeviceSource source(std::make_shared<SensorDevice>());
  EXPECT_EQ(source.name(), "xrt");
  auto r = source.read();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_DOUBLE_EQ(*r->watts, 24.5);
  EXPECT_DOUBLE_EQ(*r->temperature_c, 61);
  EXPECT_DOUBLE_EQ(r->rails_watts.at("12v_pex"), 18.0);
  EXPECT_DOUBLE_EQ(r->temperatures_c.at("fpga0"), 61);
  EXPECT_EQ(r->notes, std::vector<std::string>{"fpga_hbm: no such key"});
}

TEST(DeviceSource, TheEmulatorHasNoSensors) {
  DeviceSource source(std::make_shared<EmuDevice>("zcu102", EmuDeviceOptions{.threads = 1}));
  EXPECT_EQ(source.name(), "emu");
  auto r = source.read();
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message().rfind("unsupported: ", 0), 0u) << r.status().message();
}

// A source that answers from a script (one entry per read; the last repeats) and counts reads.
class ScriptedSource : public PowerSource {
 public:
  ScriptedSource(std::string name, std::deque<Result<PowerReading>> script, std::shared_ptr<std::atomic<int>> reads)
      : name_(std::move(name)), script_(std::move(script)), reads_(std::move(reads)) {}
  std::string name() const override { return name_; }
  Result<PowerReading> read() override {
    ++*reads_;
    Result<PowerReading> r = script_.front();
    if (script_.size() > 1) script_.pop_front();
    return r;
  }

 private:
  std::string name_;
  std::deque<Result<PowerReading>> script_;
  std::shared_ptr<std::atomic<int>> reads_;
};

PowerReading reading(std::optional<double> watts, std::optional<double> temperature_c = std::nullopt) {
  PowerReading r;
  r.watts = watts;
  r.temperature_c = temperature_c;
  return r;
}

struct Scripted {
  std::unique_ptr<PowerSource> source;
  std::shared_ptr<std::atomic<int>> reads;
};

Scripted scripted(std::string name, std::deque<Result<PowerReading>> script) {
  auto reads = std::make_shared<std::atomic<int>>(0);
  return {std::make_unique<ScriptedSource>(std::move(name), std::move(script), reads), reads};
}

TelemetrySamplerOptions options_with(FakeClock& clock, size_t capacity = 100) {
  TelemetrySamplerOptions o;
  o.interval = 1s;
  o.history_capacity = capacity;
  o.steady_now = clock.fn();
  return o;
}

// Captures what spdlog's default logger writes while alive.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_pattern("%l %v");
    auto logger = std::make_shared<spdlog::logger>("test", sink);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  // Lines containing `text`.
  int count(const std::string& text) const {
    std::istringstream in(out_.str());
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
    return n;
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST(TelemetrySampler, TakesPowerAndTemperatureFromTheFirstSourceThatHasThem) {
  FakeClock clock;
  auto a = scripted("a", {reading(std::nullopt, 40.0)});
  auto b = scripted("b", {reading(5.0, 50.0)});
  auto c = scripted("c", {reading(7.0)});
  std::vector<std::unique_ptr<PowerSource>> sources;
  sources.push_back(std::move(a.source));
  sources.push_back(std::move(b.source));
  sources.push_back(std::move(c.source));
  TelemetrySampler sampler(std::move(sources), options_with(clock));

  EXPECT_FALSE(sampler.latest().has_value());
  EXPECT_EQ(sampler.power_source_name(), "");
  const TelemetrySample s = sampler.sample_now();
  EXPECT_DOUBLE_EQ(*s.watts, 5.0);
  EXPECT_EQ(s.power_source, "b");
  EXPECT_DOUBLE_EQ(*s.temperature_c, 40.0);
  EXPECT_EQ(s.temperature_source, "a");
  EXPECT_EQ(s.steady_time, clock.now);
  EXPECT_EQ(sampler.power_source_name(), "b");
  EXPECT_EQ(*a.reads, 1);
  EXPECT_EQ(*b.reads, 1);
  EXPECT_EQ(*c.reads, 0);  // both found before it
  ASSERT_TRUE(sampler.latest_power_reading().has_value());
  EXPECT_DOUBLE_EQ(*sampler.latest_power_reading()->watts, 5.0);
}

TEST(TelemetrySampler, IntegratesEnergyWithTheTrapezoidRule) {
  FakeClock clock;
  // watts per sample at t = 0, 1, 3, 4, 5 (none), 6, 7 s.
  auto source = scripted("meter", {reading(10.0), reading(20.0), reading(20.0), reading(10.0),
                                   Status::unavailable("i2c timeout"), reading(10.0), reading(30.0)});
  std::vector<std::unique_ptr<PowerSource>> sources;
  sources.push_back(std::move(source.source));
  TelemetrySampler sampler(std::move(sources), options_with(clock));

  const std::vector<std::chrono::seconds> steps = {0s, 1s, 2s, 1s, 1s, 1s, 1s};
  for (auto step : steps) {
    clock.now += step;
    sampler.sample_now();
  }
  // (10+20)/2*1 + (20+20)/2*2 + (20+10)/2*1, nothing across the gap at 5 s, then (10+30)/2*1.
  EXPECT_DOUBLE_EQ(sampler.energy_joules(), 15.0 + 40.0 + 15.0 + 20.0);
  const auto history = sampler.history(100);
  ASSERT_EQ(history.size(), 7u);
  EXPECT_FALSE(history[4].watts.has_value());
  EXPECT_EQ(history[4].power_source, "");
  EXPECT_DOUBLE_EQ(*history[6].watts, 30.0);
}

TEST(TelemetrySampler, KeepsABoundedRingOldestFirst) {
  FakeClock clock;
  auto source = scripted("meter", {reading(1.0), reading(2.0), reading(3.0), reading(4.0), reading(5.0)});
  std::vector<std::unique_ptr<PowerSource>> sources;
  sources.push_back(std::move(source.source));
  TelemetrySampler sampler(std::move(sources), options_with(clock, 3));
  for (int i = 0; i < 5; ++i) {
    clock.now += 1s;
    sampler.sample_now();
  }
  const auto all = sampler.history(10);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_DOUBLE_EQ(*all[0].watts, 3.0);
  EXPECT_DOUBLE_EQ(*all[2].watts, 5.0);
  const auto two = sampler.history(2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_DOUBLE_EQ(*two[0].watts, 4.0);
  EXPECT_TRUE(sampler.history(0).empty());
  EXPECT_DOUBLE_EQ(*sampler.latest()->watts, 5.0);
  EXPECT_EQ(sampler.latest()->steady_time, clock.now);
}

TEST(TelemetrySampler, UnsupportedSourcesAreLoggedOnceAndAskedNoMore) {
  LogCapture log;
  FakeClock clock;
  auto xrt = scripted("xrt", {unsupported_source("XRT reports no electrical sensors")});
  auto model = scripted("model", {reading(3.0)});
  std::vector<std::unique_ptr<PowerSource>> sources;
  sources.push_back(std::move(xrt.source));
  sources.push_back(std::move(model.source));
  TelemetrySampler sampler(std::move(sources), options_with(clock));
  for (int i = 0; i < 5; ++i) {
    clock.now += 1s;
    EXPECT_EQ(sampler.sample_now().power_source, "model");
  }
  EXPECT_EQ(*xrt.reads, 1);
  EXPECT_EQ(*model.reads, 5);
  EXPECT_EQ(log.count("xrt"), 1) << log.text();
  EXPECT_EQ(log.count("info telemetry: power source xrt: unsupported: XRT reports no electrical sensors"), 1)
      << log.text();
}

TEST(TelemetrySampler, FailuresAreLoggedOncePerRun) {
  LogCapture log;
  FakeClock clock;
  const Status eio = Status::unavailable("EIO");
  auto flaky = scripted("hwmon", {eio, eio, eio, reading(2.0), eio, eio});
  std::vector<std::unique_ptr<PowerSource>> sources;
  sources.push_back(std::move(flaky.source));
  TelemetrySampler sampler(std::move(sources), options_with(clock));
  for (int i = 0; i < 6; ++i) {
    clock.now += 1s;
    sampler.sample_now();
  }
  EXPECT_EQ(*flaky.reads, 6);  // a failing source is still asked
  EXPECT_EQ(log.count("warning telemetry: power source hwmon failed: UNAVAILABLE: EIO"), 2) << log.text();
  EXPECT_EQ(log.count("works again"), 1) << log.text();
}

TEST(TelemetrySampler, ThreadSamplesEveryIntervalAndStopsPromptly) {
  auto source = scripted("meter", {reading(1.0)});
  std::vector<std::unique_ptr<PowerSource>> sources;
  sources.push_back(std::move(source.source));
  TelemetrySamplerOptions options;
  options.interval = 10ms;
  TelemetrySampler sampler(std::move(sources), options);
  sampler.start();
  sampler.start();  // no second thread
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (sampler.history(3).size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(sampler.history(3).size(), 3u);
  sampler.stop();
  const int reads = *source.reads;
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(*source.reads, reads);  // no sampling after stop()
  EXPECT_GT(sampler.energy_joules(), 0.0);
}

TEST(TelemetrySampler, StopWakesALongWait) {
  auto source = scripted("meter", {reading(1.0)});
  std::vector<std::unique_ptr<PowerSource>> sources;
  sources.push_back(std::move(source.source));
  TelemetrySamplerOptions options;
  options.interval = std::chrono::hours(1);
  TelemetrySampler sampler(std::move(sources), options);
  sampler.start();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!sampler.latest() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(sampler.latest().has_value());  // the first sample comes at once

  const auto begin = std::chrono::steady_clock::now();
  sampler.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s);
  sampler.stop();   // idempotent
  sampler.start();  // stopped for good: no new thread
  EXPECT_EQ(*source.reads, 1);
}

TEST(TelemetrySampler, DestructorStopsARunningThread) {
  auto source = scripted("meter", {reading(1.0)});
  std::vector<std::unique_ptr<PowerSource>> sources;
  sources.push_back(std::move(source.source));
  TelemetrySamplerOptions options;
  options.interval = std::chrono::hours(1);
  const auto begin = std::chrono::steady_clock::now();
  {
    TelemetrySampler sampler(std::move(sources), options);
    sampler.start();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s);
}

TEST(TelemetrySampler, WithoutAnySourceSamplesHaveNothing) {
  FakeClock clock;
  TelemetrySampler sampler({}, options_with(clock));
  const TelemetrySample s = sampler.sample_now();
  EXPECT_FALSE(s.watts.has_value());
  EXPECT_FALSE(s.temperature_c.has_value());
  EXPECT_EQ(sampler.power_source_name(), "");
  EXPECT_DOUBLE_EQ(sampler.energy_joules(), 0.0);
  EXPECT_FALSE(sampler.latest_power_reading().has_value());
}

}  // namespace
}  // namespace tessera::telemetry
