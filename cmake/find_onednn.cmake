# Finds oneDNN (Debian libdnnl-dev) and sets TESSERA_HAVE_ONEDNN.
#
# TESSERA_ONEDNN = AUTO (default: use oneDNN when found), ON (fail without it) or OFF. Optional
# because Debian does not package it for every architecture (armhf has none); without it the
# fp32 host path keeps its own GEMM loops and the benchmarks have no oneDNN reference column.
# A cross build looks only when asked (ON): the build machine's copy is for the wrong architecture.
# Debian's build uses the OpenMP runtime (DNNL_CPU_RUNTIME_OMP), so OpenMP comes with it: the
# host sets the threads of each call (omp_set_num_threads) from its thread budget.
set(TESSERA_ONEDNN AUTO CACHE STRING "Use oneDNN for the fp32 host path and the benchmarks: AUTO, ON or OFF")
set_property(CACHE TESSERA_ONEDNN PROPERTY STRINGS AUTO ON OFF)

set(TESSERA_HAVE_ONEDNN OFF)
if(TESSERA_ONEDNN STREQUAL "ON" OR (TESSERA_ONEDNN STREQUAL "AUTO" AND NOT CMAKE_CROSSCOMPILING))
  # Debian's oneDNN is built with the OpenCL GPU runtime: its config calls find_package(OpenCL
  # REQUIRED), a fatal error when OpenCL's development files are missing (libdnnl-dev does not
  # depend on them; tools/setup.sh installs ocl-icd-opencl-dev). Looked for first, so that AUTO
  # goes on without oneDNN instead of failing the configure.
  find_package(OpenCL QUIET)
  if(OpenCL_FOUND OR TESSERA_ONEDNN STREQUAL "ON")
    find_package(dnnl CONFIG QUIET)
  endif()
  find_package(OpenMP QUIET COMPONENTS CXX)
  if(dnnl_FOUND AND TARGET DNNL::dnnl AND OpenMP_CXX_FOUND)
    set(TESSERA_HAVE_ONEDNN ON)
    message(STATUS "oneDNN: ${dnnl_VERSION} (the fp32 host path's conv and GEMM; the oneDNN benchmark)")
  elseif(TESSERA_ONEDNN STREQUAL "ON")
    message(FATAL_ERROR "TESSERA_ONEDNN=ON but oneDNN (dnnl CONFIG: ${dnnl_FOUND}) or OpenMP (${OpenMP_CXX_FOUND}) "
                        "was not found; install libdnnl-dev")
  else()
    message(STATUS "oneDNN: not found (libdnnl-dev, and ocl-icd-opencl-dev for its config); the fp32 host path "
                   "uses its own GEMM loops")
  endif()
endif()
