// A fresh directory per test standing in for /sys (HwmonOptions::root), removed afterwards; the
// telemetry tests write sysfs attributes into it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::telemetry {

class SysfsTempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("tessera-sysfs-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // Writes <root>/<relative> (a sysfs attribute), creating its directory.
  void write(const std::string& relative, const std::string& content) {
    const std::filesystem::path path = root_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << content;
  }

  std::filesystem::path root_;
};

}  // namespace tessera::telemetry
