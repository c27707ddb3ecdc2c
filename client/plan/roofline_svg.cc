#include "client/plan/roofline_svg.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <vector>

#include "client/plan/text_table.h"

namespace tessera::client {
namespace {

constexpr double kWidth = 900, kHeight = 600;
constexpr double kLeft = 90, kRight = 690, kTop = 80, kBottom = 520;  // the plot area
constexpr const char* kComputeColour = "#1f77b4";
constexpr const char* kMemoryColour = "#d62728";
constexpr const char* kRoofColour = "#333333";

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// A decade's label: 0.01, 0.1, 1, 10, 100, 1k, 10k ...
std::string decade_label(int e) {
  if (e < 0) return format("%.*f", -e, std::pow(10.0, e));
  if (e < 3) return format("%.0f", std::pow(10.0, e));
  if (e < 6) return format("%.0fk", std::pow(10.0, e - 3));
  return format("1e%d", e);
}

// Log-log mapping of data coordinates onto the plot area, over whole decades.
struct Axes {
  int x0, x1, y0, y1;  // decade exponents
  double px(double x) const { return kLeft + (std::log10(x) - x0) / (x1 - x0) * (kRight - kLeft); }
  double py(double y) const { return kBottom - (std::log10(y) - y0) / (y1 - y0) * (kBottom - kTop); }
};

struct Point {
  size_t index;
  RooflinePoint at;
  const plan::LayerPlan* layer;
};

Axes make_axes(const std::vector<Point>& points, double peak, double bandwidth) {
  const double ridge = peak / bandwidth;
  double xmin = ridge / 10, xmax = ridge * 4, ymin = peak / 50, ymax = peak * 2;
  for (const Point& p : points) {
    xmin = std::min(xmin, p.at.intensity);
    xmax = std::max(xmax, p.at.intensity * 1.5);
    ymin = std::min(ymin, p.at.gops);
  }
  ymin = std::min(ymin, bandwidth * xmin);
  Axes a{static_cast<int>(std::floor(std::log10(xmin))), static_cast<int>(std::ceil(std::log10(xmax))),
         static_cast<int>(std::floor(std::log10(ymin))), static_cast<int>(std::ceil(std::log10(ymax)))};
  if (a.x1 <= a.x0) a.x1 = a.x0 + 1;
  if (a.y1 <= a.y0) a.y1 = a.y0 + 1;
  return a;
}

void grid_and_ticks(std::string& svg, const Axes& a) {
  svg += "<g class=\"grid\" stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (int e = a.x0; e <= a.x1; ++e) {
    const double x = a.px(std::pow(10.0, e));
    svg += format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, kTop, x, kBottom);
  }
  for (int e = a.y0; e <= a.y1; ++e) {
    const double y = a.py(std::pow(10.0, e));
    svg += format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", kLeft, y, kRight, y);
  }
  svg += "</g>\n<g class=\"ticks\" font-size=\"12\" fill=\"#000000\">\n";
  for (int e = a.x0; e <= a.x1; ++e) {
    svg += format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", a.px(std::pow(10.0, e)),
                  kBottom + 18, decade_label(e).c_str());
  }
  for (int e = a.y0; e <= a.y1; ++e) {
    svg += format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", kLeft - 8, a.py(std::pow(10.0, e)) + 4,
                  decade_label(e).c_str());
  }
  svg += "</g>\n";
  svg += format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#000000\"/>\n",
                kLeft, kTop, kRight - kLeft, kBottom - kTop);
  svg += format(
      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" text-anchor=\"middle\">"
      "operational intensity (ops/byte = 2 x MACs / DDR bytes)</text>\n",
      (kLeft + kRight) / 2, kBottom + 45);
  svg += format(
      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 %.1f %.1f)\">performance (GOP/s)</text>\n",
      kLeft - 55, (kTop + kBottom) / 2, kLeft - 55, (kTop + kBottom) / 2);
}

void roofs(std::string& svg, const Axes& a, double peak, double bandwidth) {
  const double xmin = std::pow(10.0, a.x0), xmax = std::pow(10.0, a.x1), ymin = std::pow(10.0, a.y0);
  const double ridge = peak / bandwidth;
  // Bandwidth roof from where it enters the plot to the ridge; compute roof from there on.
  const double bx0 = std::max(xmin, ymin / bandwidth);
  svg += "<g class=\"roofs\" stroke=\"" + std::string(kRoofColour) + "\" stroke-width=\"2\" fill=\"none\">\n";
  if (bx0 < ridge) {
    svg += format("<line class=\"bandwidth-roof\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", a.px(bx0),
                  a.py(bandwidth * bx0), a.px(ridge), a.py(peak));
  }
  svg += format("<line class=\"compute-roof\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                a.px(std::max(ridge, xmin)), a.py(peak), a.px(xmax), a.py(peak));
  svg += "</g>\n";
  // Above the compute roof, just right of the ridge (points crowd its right end).
  svg += format("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">compute roof %.1f GOP/s</text>\n",
                a.px(std::max(ridge, xmin)) + 8, a.py(peak) - 8, peak);
  if (bx0 < ridge) {
    // Along the bandwidth roof, a third of the way up, at the line's on-screen angle.
    const double lx = std::pow(10.0, std::log10(bx0) + (std::log10(ridge) - std::log10(bx0)) * 0.35);
    const double x = a.px(lx), y = a.py(bandwidth * lx);
    const double angle =
        std::atan2(a.py(peak) - a.py(bandwidth * bx0), a.px(ridge) - a.px(bx0)) * 180 / std::numbers::pi;
    svg += format(
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" transform=\"rotate(%.1f %.1f %.1f)\">"
        "DDR roof %.1f GB/s</text>\n",
        x, y - 6, angle, x, y - 6, bandwidth);
  }
}

void points_svg(std::string& svg, const Axes& a, const std::vector<Point>& points, const PlanReport& r) {
  svg += "<g class=\"layers\" stroke=\"#000000\" stroke-width=\"0.5\">\n";
  for (const Point& p : points) {
    const double x = a.px(p.at.intensity), y = a.py(p.at.gops);
    const bool memory = p.layer->cost.memory_bound;
    svg += format("<circle class=\"layer conv %s\" data-layer=\"%zu\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\">",
                  memory ? "memory-bound" : "compute-bound", p.index, x, y, memory ? kMemoryColour : kComputeColour);
    svg += format("<title>%zu %s: %s, %.2f ops/B, %.1f GOP/s, %.1f µs, %s-bound</title></circle>\n", p.index,
                  xml_escape(p.layer->name).c_str(), xml_escape(layer_shape(p.layer->desc)).c_str(), p.at.intensity,
                  p.at.gops, layer_us(*p.layer, r.board), memory ? "memory" : "compute");
  }
  // Layers with the same coordinates (a network's repeated blocks) share one label: "10,20,29".
  struct Label {
    double x, y;
    std::vector<size_t> layers;
  };
  std::vector<Label> labels;
  for (const Point& p : points) {
    const double x = a.px(p.at.intensity), y = a.py(p.at.gops);
    auto same =
        std::find_if(labels.begin(), labels.end(), [&](const Label& l) { return std::hypot(l.x - x, l.y - y) < 3.0; });
    if (same == labels.end()) {
      labels.push_back({x, y, {p.index}});
    } else {
      same->layers.push_back(p.index);
    }
  }
  svg += "</g>\n<g class=\"labels\" font-size=\"10\" fill=\"#000000\">\n";
  for (const Label& l : labels) {
    std::string text;
    for (size_t i = 0; i < l.layers.size() && i < 4; ++i) {
      if (i > 0) text += ',';
      text += std::to_string(l.layers[i]);
    }
    if (l.layers.size() > 4) text += format(",+%zu", l.layers.size() - 4);
    svg += format("<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", l.x + 6, l.y - 6, text.c_str());
  }
  svg += "</g>\n";
}

void legend(std::string& svg, size_t conv, size_t omitted) {
  const double x = kRight + 20;
  double y = kTop + 10;
  svg += "<g class=\"legend\" font-size=\"12\">\n";
  svg += format(
      "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" stroke=\"#000000\" stroke-width=\"0.5\"/>"
      "<text x=\"%.1f\" y=\"%.1f\">compute-bound conv</text>\n",
      x + 6, y, kComputeColour, x + 18, y + 4);
  y += 22;
  svg += format(
      "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" stroke=\"#000000\" stroke-width=\"0.5\"/>"
      "<text x=\"%.1f\" y=\"%.1f\">memory-bound conv</text>\n",
      x + 6, y, kMemoryColour, x + 18, y + 4);
  y += 22;
  svg += format(
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>"
      "<text x=\"%.1f\" y=\"%.1f\">roofs (compute, DDR)</text>\n",
      x, y, x + 12, y, kRoofColour, x + 18, y + 4);
  y += 30;
  svg += format("<text x=\"%.1f\" y=\"%.1f\">%zu conv layers, labelled</text>\n", x, y, conv);
  svg += format("<text x=\"%.1f\" y=\"%.1f\">by layer index (tessera plan)</text>\n", x, y + 16);
  svg += format("<text x=\"%.1f\" y=\"%.1f\">%zu pool/add layers omitted</text>\n", x, y + 38, omitted);
  svg += format("<text x=\"%.1f\" y=\"%.1f\">(no MACs)</text>\n", x, y + 54);
  svg += format("<text x=\"%.1f\" y=\"%.1f\">modeled, not measured</text>\n", x, y + 76);
  svg += "</g>\n";
}

}  // namespace

std::string roofline_svg(const PlanReport& r) {
  const plan::ModelPlan& p = r.plan;
  const double peak = 2.0 * static_cast<double>(r.board.macs_per_cycle()) *
                      plan::effective_board(r.board, p.options.space).compute_units * r.board.fabric_clock_mhz / 1e3;
  const double bandwidth = r.board.ddr_gbps;
  std::vector<Point> points;
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (auto at = roofline_point(p.layers[i], r.board)) points.push_back({i, *at, &p.layers[i]});
  }
  const Axes axes = make_axes(points, peak, bandwidth);
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
      kWidth, kHeight, kWidth, kHeight);
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  svg += format("<text x=\"%.1f\" y=\"30\" font-size=\"18\" text-anchor=\"middle\">Roofline: %s on %s</text>\n",
                kWidth / 2, xml_escape(r.model).c_str(), xml_escape(r.board.name).c_str());
  svg += format(
      "<text x=\"%.1f\" y=\"52\" font-size=\"12\" text-anchor=\"middle\">%.0f MHz, space %s, objective %s, "
      "DRAM model %s; per image, modeled from the board profile</text>\n",
      kWidth / 2, r.board.fabric_clock_mhz, plan::search_space_name(p.options.space),
      plan::objective_name(p.options.objective), plan::dram_model_name(p.options.dram));
  grid_and_ticks(svg, axes);
  roofs(svg, axes, peak, bandwidth);
  points_svg(svg, axes, points, r);
  legend(svg, points.size(), p.layers.size() - searched_layers(p));
  svg += "</svg>\n";
  return svg;
}

Status write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::unavailable("cannot write " + path.string() + ": " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return Status::unavailable("cannot write " + path.string() + ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return Status::unavailable("cannot write " + path.string() + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace tessera::client
