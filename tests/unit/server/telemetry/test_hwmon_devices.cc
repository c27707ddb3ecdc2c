// hwmon rails per device instance: HwmonOptions::monitors picks a device's own power monitors by
// name or by the sysfs path of their `device` link (two PCI cards, one board's rails split), and
// parse_hwmon_rails() reads --hwmon-rails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "server/telemetry/hwmon_source.h"
#include "tests/unit/server/telemetry/sysfs_temp_dir.h"

namespace tessera::telemetry {
namespace {

namespace fs = std::filesystem;

class HwmonDevices : public SysfsTempDir {
 protected:
  // hwmon<n>: monitor `name` with one power channel of `microwatts`, its `device` link to
  // <root>/devices/<device> (as sysfs links a hwmon to the card or chip it belongs to).
  void monitor(int n, const std::string& name, const std::string& device, int microwatts) {
    const std::string dir = "class/hwmon/hwmon" + std::to_string(n);
    write(dir + "/name", name + "\n");
    write(dir + "/power1_input", std::to_string(microwatts) + "\n");
    fs::create_directories(root_ / "devices" / device);
    fs::create_symlink(root_ / "devices" / device, root_ / dir / "device");
  }
  Result<PowerReading> read(std::vector<std::string> monitors) {
    return HwmonSource(HwmonOptions{.root = root_, .monitors = std::move(monitors)}).read();
  }
};

TEST_F(HwmonDevices, EachCardReadsTheMonitorsUnderItsOwnPciAddress) {
  monitor(0, "ina226_card", "pci0000:00/0000:3b:00.0", 20'000'000);
  monitor(1, "ina226_card", "pci0000:00/0000:af:00.0", 30'000'000);
  monitor(2, "ina226_aux", "pci0000:00/0000:af:00.0/i2c-4/4-0041", 5'000'000);
  const auto first = read({"0000:3b:00.0"});
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_DOUBLE_EQ(*first->watts, 20.0);
  EXPECT_EQ(first->rails_watts.size(), 1u);
  const auto second = read({"0000:af:00.0"});
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_DOUBLE_EQ(*second->watts, 35.0) << "the card's monitor and the one on its I2C bus";
  const auto all = read({});
  ASSERT_TRUE(all.is_ok());
  EXPECT_DOUBLE_EQ(*all->watts, 55.0) << "no list: every monitor, as with one device";
}

TEST_F(HwmonDevices, MonitorsAreAlsoPickedByName) {
  monitor(0, "ina226_u76", "i2c-3/3-0040", 1'250'000);
  monitor(1, "ina226_u79", "i2c-3/3-0041", 2'000'000);
  monitor(2, "ina226_u80", "i2c-3/3-0042", 500'000);
  const auto picked = read({"ina226_u79", "ina226_u80"});
  ASSERT_TRUE(picked.is_ok()) << picked.status().to_string();
  EXPECT_DOUBLE_EQ(*picked->watts, 2.5);
  EXPECT_EQ(picked->rails_watts.count("ina226_u76:power1"), 0u);
}

TEST_F(HwmonDevices, NoMatchingMonitorIsUnsupportedAndSaysWhatWasLookedFor) {
  monitor(0, "ina226_u76", "i2c-3/3-0040", 1'250'000);
  const auto none = read({"0000:5e:00.0"});
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(none.status().message().find("matching 0000:5e:00.0"), std::string::npos) << none.status().message();
}

TEST(HwmonRails, ParsesDevicesAndTheirMatches) {
  const auto rails = parse_hwmon_rails("0=0000:3b:00.0,1=ina226_u79+ina226_u80");
  ASSERT_TRUE(rails.is_ok()) << rails.status().to_string();
  ASSERT_EQ(rails->size(), 2u);
  EXPECT_EQ(rails->at(0), std::vector<std::string>{"0000:3b:00.0"});
  EXPECT_EQ(rails->at(1), (std::vector<std::string>{"ina226_u79", "ina226_u80"}));
  ASSERT_TRUE(parse_hwmon_rails("").is_ok());
  EXPECT_TRUE(parse_hwmon_rails("")->empty());
}

TEST(HwmonRails, RefusesWhatItCannotRead) {
  for (const char* bad : {"0", "x=ina", "=ina", "0=", "0=a+", "0=a,0=b", "0=a,", "-1=a"}) {
    const auto rails = parse_hwmon_rails(bad);
    EXPECT_FALSE(rails.is_ok()) << bad;
    if (!rails.is_ok()) {
      EXPECT_EQ(rails.status().code(), StatusCode::kInvalidArgument) << bad;
      EXPECT_NE(rails.status().message().find("--hwmon-rails"), std::string::npos) << rails.status().message();
    }
  }
}

}  // namespace
}  // namespace tessera::telemetry
