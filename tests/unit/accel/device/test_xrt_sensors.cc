// XRT's electrical and thermal JSON reports -> DeviceSensors, on sample text shaped like what
// xrt::device::get_info<electrical/thermal>() returns (XRT's core/common/sensor.cpp written out by
// boost::property_tree: every value a string, absent sensors "is_present": "false").
#include <gtest/gtest.h>

#include <string>

#include "accel/device/xrt/xrt_sensors.h"

namespace tessera {
namespace {

// An Alveo/F1-class card on XRT's legacy sensor path: four input rails, one internal rail, a rail
// the card lacks and one whose query failed.
constexpr const char* kElectrical = R"({
    "power_rails": [
        {
            "id": "12v_aux",
            "description": "12 Volts Auxillary",
            "voltage": { "volts": "12.148", "is_present": "true" },
            "current": { "amps": "1.025", "is_present": "true" }
        },
        {
            "id": "12v_pex",
            "description": "12 Volts PCI Express",
            "voltage": { "volts": "12.124", "is_present": "true" },
            "current": { "amps": "1.500", "is_present": "true" }
        },
        {
            "id": "3v3_pex",
            "description": "3.3 Volts PCI Express",
            "voltage": { "volts": "3.300", "is_present": "true" },
            "current": { "amps": "0.500", "is_present": "true" }
        },
        {
            "id": "3v3_aux",
            "description": "3.3 Volts Auxillary",
            "voltage": { "volts": "3.312", "is_present": "true" },
            "current": { "amps": "0.000", "is_present": "false" }
        },
        {
            "id": "vccint",
            "description": "Internal FPGA Vcc",
            "voltage": { "volts": "0.850", "is_present": "true" },
            "current": { "amps": "9.800", "is_present": "true" }
        },
        {
            "id": "12v_aux1",
            "description": "12 Volts Aux1",
            "voltage": { "error_msg": "Sensor not supported", "volts": "0.000", "is_present": "false" },
            "current": { "amps": "0.000", "is_present": "false" }
        }
    ],
    "power_consumption_max_watts": "225",
    "power_consumption_watts": "33.125488",
    "power_consumption_warning": "false"
}
)";

constexpr const char* kThermal = R"({
    "thermals": [
        { "location_id": "pcb_top_front", "description": "PCB Top Front", "temp_C": "38", "is_present": "true" },
        { "location_id": "pcb_top_rear", "description": "PCB Top Rear", "temp_C": "33", "is_present": "true" },
        { "location_id": "pcb_bottom_front", "description": "PCB Bottom Front", "temp_C": "0", "is_present": "false" },
        { "location_id": "cage_temp_0", "description": "Cage0", "temp_C": "0", "is_present": "false" },
        { "location_id": "fpga0", "description": "FPGA", "temp_C": "61", "is_present": "true" },
        { "location_id": "int_vcc", "description": "Int Vcc", "temp_C": "52", "is_present": "true" },
        { "error_msg": "hbm_temp: no such key", "location_id": "fpga_hbm", "description": "FPGA HBM",
          "temp_C": "0", "is_present": "false" }
    ]
}
)";

bool has_note_containing(const DeviceSensors& s, const std::string& text) {
  for (const std::string& note : s.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(XrtSensors, ElectricalGivesBoardPowerAndPresentRails) {
  auto s = parse_xrt_electrical(kElectrical);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_TRUE(s->power_watts.has_value());
  EXPECT_DOUBLE_EQ(*s->power_watts, 33.125488);
  EXPECT_FALSE(s->temperature_c.has_value());
  ASSERT_EQ(s->rails_watts.size(), 4u);
  EXPECT_DOUBLE_EQ(s->rails_watts.at("12v_aux"), 12.148 * 1.025);
  EXPECT_DOUBLE_EQ(s->rails_watts.at("12v_pex"), 12.124 * 1.5);
  EXPECT_DOUBLE_EQ(s->rails_watts.at("3v3_pex"), 3.3 * 0.5);
  EXPECT_DOUBLE_EQ(s->rails_watts.at("vccint"), 0.85 * 9.8);
  EXPECT_FALSE(s->rails_watts.count("3v3_aux"));  // no current
  EXPECT_TRUE(has_note_containing(*s, "Sensor not supported"));
}

TEST(XrtSensors, ElectricalWithoutTotalSumsTheInputRails) {
  std::string text = kElectrical;
  text.replace(text.find("\"33.125488\""), 11, "\"N/A\"");
  auto s = parse_xrt_electrical(text);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_TRUE(s->power_watts.has_value());
  // 12v_aux + 12v_pex + 3v3_pex; vccint is inside the card, not an input.
  EXPECT_DOUBLE_EQ(*s->power_watts, 12.148 * 1.025 + 12.124 * 1.5 + 3.3 * 0.5);
}

TEST(XrtSensors, ElectricalAcceptsNumbersAndXbutilsWrapper) {
  auto s = parse_xrt_electrical(
      R"({"electrical": {"power_consumption_watts": 21.5,
          "power_rails": [{"id": "12v_pex", "voltage": {"volts": 12.0}, "current": {"amps": 1.25}}]}})");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_DOUBLE_EQ(*s->power_watts, 21.5);
  EXPECT_DOUBLE_EQ(s->rails_watts.at("12v_pex"), 15.0);
}

TEST(XrtSensors, ElectricalWithNothingMeasuredIsUnsupported) {
  // An edge platform on the legacy path: every query failed, power computed as 0.
  auto s = parse_xrt_electrical(R"({
      "power_rails": [{"id": "12v_pex", "description": "12 Volts PCI Express",
                       "voltage": {"volts": "0.000", "is_present": "false"},
                       "current": {"amps": "0.000", "is_present": "false"}}],
      "power_consumption_max_watts": "N/A", "power_consumption_watts": "0",
      "power_consumption_warning": "N/A"})");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.status().message().rfind("unsupported: ", 0), 0u) << s.status().message();
}

TEST(XrtSensors, EmptyReportsAreUnsupported) {
  // boost::property_tree writes an empty tree as "".
  for (const char* text : {"\"\"\n", "{}", "null"}) {
    auto e = parse_xrt_electrical(text);
    ASSERT_FALSE(e.is_ok()) << text;
    EXPECT_EQ(e.status().code(), StatusCode::kUnimplemented) << text;
    EXPECT_NE(e.status().message().find("no electrical sensors"), std::string::npos) << e.status().message();
    auto t = parse_xrt_thermal(text);
    ASSERT_FALSE(t.is_ok()) << text;
    EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented) << text;
  }
}

TEST(XrtSensors, MalformedInputIsUnsupportedWithAReason) {
  for (const char* text : {"", "{\"power_rails\": [", "not json at all", "{\"power_consumption_watts\": }"}) {
    auto e = parse_xrt_electrical(text);
    ASSERT_FALSE(e.is_ok()) << text;
    EXPECT_EQ(e.status().code(), StatusCode::kUnimplemented) << text;
    EXPECT_NE(e.status().message().find("not JSON"), std::string::npos) << e.status().message();
    auto t = parse_xrt_thermal(text);
    ASSERT_FALSE(t.is_ok()) << text;
    EXPECT_NE(t.status().message().find("not JSON"), std::string::npos) << t.status().message();
  }
  auto array = parse_xrt_electrical("[1, 2]");
  ASSERT_FALSE(array.is_ok());
  EXPECT_NE(array.status().message().find("not a JSON object"), std::string::npos) << array.status().message();
}

TEST(XrtSensors, OddValuesAreSkippedNotFatal) {
  auto s = parse_xrt_electrical(R"({"power_consumption_watts": "12.5",
      "power_rails": [
        {"id": "a", "voltage": {"volts": "abc"}, "current": {"amps": "1"}},
        {"id": "b", "voltage": "12", "current": {"amps": "1"}},
        "not a rail",
        {"id": "c", "voltage": {"volts": "1.5", "is_present": true}, "current": {"amps": "2", "is_present": true}}
      ]})");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_DOUBLE_EQ(*s->power_watts, 12.5);
  ASSERT_EQ(s->rails_watts.size(), 1u);
  EXPECT_DOUBLE_EQ(s->rails_watts.at("c"), 3.0);

  auto error_tree = parse_xrt_electrical(R"({"power_rails": {"error_msg": "query failed: EIO"}})");
  ASSERT_FALSE(error_tree.is_ok());
  EXPECT_NE(error_tree.status().message().find("query failed: EIO"), std::string::npos)
      << error_tree.status().message();
}

TEST(XrtSensors, ThermalGivesTheHottestPresentSensor) {
  auto s = parse_xrt_thermal(kThermal);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_TRUE(s->temperature_c.has_value());
  EXPECT_DOUBLE_EQ(*s->temperature_c, 61);
  EXPECT_FALSE(s->power_watts.has_value());
  ASSERT_EQ(s->temperatures_c.size(), 4u);
  EXPECT_DOUBLE_EQ(s->temperatures_c.at("pcb_top_front"), 38);
  EXPECT_DOUBLE_EQ(s->temperatures_c.at("int_vcc"), 52);
  EXPECT_FALSE(s->temperatures_c.count("fpga_hbm"));
  EXPECT_TRUE(has_note_containing(*s, "hbm_temp: no such key"));
}

TEST(XrtSensors, ThermalDataDrivenWithoutSensorsIsUnsupported) {
  // XRT's data-driven path when the card lists no thermal sensor.
  auto s = parse_xrt_thermal(R"({"thermals": {"error_msg": "Information unavailable"}})");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.status().message().find("Information unavailable"), std::string::npos) << s.status().message();
}

TEST(XrtSensors, MergeCombinesBothReports) {
  auto s = merge_xrt_sensors(std::string(kElectrical), std::string(kThermal));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_DOUBLE_EQ(*s->power_watts, 33.125488);
  EXPECT_DOUBLE_EQ(*s->temperature_c, 61);
  EXPECT_EQ(s->rails_watts.size(), 4u);
  EXPECT_EQ(s->temperatures_c.size(), 4u);
}

TEST(XrtSensors, MergeKeepsWhatOneReportGives) {
  auto s = merge_xrt_sensors(Status::unavailable("XRT electrical sensors: device offline"), std::string(kThermal));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_FALSE(s->power_watts.has_value());
  EXPECT_DOUBLE_EQ(*s->temperature_c, 61);
  EXPECT_TRUE(has_note_containing(*s, "device offline"));
}

TEST(XrtSensors, MergeOfNothingIsUnsupportedOrUnavailable) {
  auto none = merge_xrt_sensors(std::string("\"\""), std::string("{}"));
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(none.status().message().rfind("unsupported: ", 0), 0u) << none.status().message();
  EXPECT_NE(none.status().message().find("electrical"), std::string::npos);
  EXPECT_NE(none.status().message().find("thermal"), std::string::npos);

  auto failed = merge_xrt_sensors(Status::unavailable("XRT electrical sensors: EIO"), std::string("{}"));
  ASSERT_FALSE(failed.is_ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("EIO"), std::string::npos);
}

}  // namespace
}  // namespace tessera
