#include "client/plan/text_table.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace tessera::client {

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string truncate_front(const std::string& s, size_t width) {
  if (display_width(s) <= width) return s;
  if (width <= 3) return s.substr(0, width);
  // Keep the last width - 3 code points.
  size_t keep = width - 3, start = s.size();
  while (start > 0 && keep > 0) {
    --start;
    if ((static_cast<unsigned char>(s[start]) & 0xC0) != 0x80) --keep;
  }
  return "..." + s.substr(start);
}

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

void TextTable::print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const Column& c : columns_) widths.push_back(display_width(c.header));
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));
  }
  auto print_row = [&](auto cell_at) {
    std::string line;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const std::string cell = cell_at(i);
      const std::string pad(widths[i] - display_width(cell), ' ');
      if (i > 0) line += "  ";
      line += columns_[i].align == Align::kRight ? pad + cell : cell + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print_row([&](size_t i) { return columns_[i].header; });
  for (const auto& row : rows_) print_row([&](size_t i) { return i < row.size() ? row[i] : std::string(); });
}

}  // namespace tessera::client
