// A plain-text table: columns as wide as their widest cell, left- or right-aligned, two spaces
// apart. Widths count UTF-8 code points, so "µs" is two columns wide.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::client {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = Align::kRight;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // One cell per column (missing cells print empty).
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void print(std::ostream& out) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Code points in a UTF-8 string.
size_t display_width(const std::string& s);

// `s` cut to `width` columns, keeping its end ("...ures.12/Conv"): node names differ at the end.
std::string truncate_front(const std::string& s, size_t width);

// printf-style formatting into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tessera::client
