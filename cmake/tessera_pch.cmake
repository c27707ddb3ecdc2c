# tessera_precompile_headers(<target> <set>): precompiles one of the header sets below for
# <target>'s translation units (CMake's target_precompile_headers, -DTESSERA_PCH=OFF turns it off).
#
# Only third-party headers, never a project header: a precompiled header is included into every
# unit of its target, so a project header in it would let a unit see across an arrow the layering
# forbids (cmake/tessera_layer.cmake) without including it. The sets are what the targets' units
# parse again and again: gRPC with protobuf, Boost.Asio/Beast, nlohmann-json and GoogleTest make up
# most of a server or test unit's front-end time (GCC 12, test_grpc.cc 8.0 -> 5.9 CPU-s, -O3, with
# the test set; docs/testing.md has the tree totals). Each target builds its own header once
# (~15 CPU-s), so only targets with many units take one (the client and the test executables; the
# server's rooms are unity builds instead, server/CMakeLists.txt).
option(TESSERA_PCH "Precompile the heaviest third-party headers of the client and test targets" ON)

set(tessera_pch_server
  <grpcpp/grpcpp.h>
  <boost/asio.hpp>
  <boost/beast/core.hpp>
  <boost/beast/http.hpp>
  <nlohmann/json.hpp>
  <spdlog/spdlog.h>)
set(tessera_pch_client
  <grpcpp/grpcpp.h>
  <boost/asio.hpp>
  <boost/beast/core.hpp>
  <boost/beast/http.hpp>
  <nlohmann/json.hpp>
  <CLI/CLI.hpp>)
set(tessera_pch_tests
  ${tessera_pch_server}
  <gtest/gtest.h>)

function(tessera_precompile_headers target set)
  if(NOT TESSERA_PCH)
    return()
  endif()
  if(NOT DEFINED tessera_pch_${set})
    message(FATAL_ERROR "tessera_precompile_headers: no header set '${set}' (server, client, tests)")
  endif()
  target_precompile_headers(${target} PRIVATE ${tessera_pch_${set}})
endfunction()
