// Issue 24.8: the web root serves the site's own files and nothing else. The daemon's default web
// root is the built site (web/CMakeLists.txt: index.html, app.css, js/*.js and the npm files the
// page loads); the source folder's development files (README.md, CMakeLists.txt, package.json,
// the lockfile, node_modules at large) are not there to serve. Before, a build tree's daemon
// served the source folder web/ whole.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/daemon_test.h"

namespace tessera::testing {
namespace {

class WebSiteTest : public DaemonTest {};

TEST_F(WebSiteTest, OnlyTheSitesOwnFilesAreServed) {
  HttpClient http(daemon_->http_port());
  for (const char* page : {"/", "/index.html", "/app.css", "/js/main.js", "/js/live.js",
                           "/node_modules/uplot/dist/uPlot.esm.js", "/node_modules/uplot/dist/uPlot.min.css"}) {
    const HttpReply reply = http.get(page);
    EXPECT_EQ(reply.status, 200) << page << ": " << reply.error << reply.body;
  }
  for (const char* file : {"/README.md", "/CMakeLists.txt", "/package.json", "/package-lock.json",
                           "/node_modules/uplot/package.json", "/node_modules/uplot/README.md",
                           "/node_modules/uplot/dist/uPlot.iife.js", "/node_modules/.package-lock.json"}) {
    const HttpReply reply = http.get(file);
    EXPECT_EQ(reply.status, 404) << file << " was served: " << reply.body.substr(0, 200);
  }
  // The page's own references all resolve in the built site.
  const std::string index = http.get("/").body;
  EXPECT_NE(index.find("node_modules/uplot/dist/uPlot.min.css"), std::string::npos);
  EXPECT_NE(daemon_->log().find("web root " + std::string(TESSERA_WEB_SITE)), std::string::npos) << daemon_->log();
}

}  // namespace
}  // namespace tessera::testing
