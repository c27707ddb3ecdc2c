# Finds Xilinx XRT for the xrt device backend and sets TESSERA_HAVE_XRT.
#
# TESSERA_XRT = AUTO (default: build the backend when XRT is found), ON (fail without XRT) or OFF.
# Looked for under XRT_ROOT (a prefix with include/ and lib/, e.g. /opt/xilinx/xrt or a board
# sysroot's /usr), then $XILINX_XRT, then the compiler's standard places (Debian's libxrt-dev on
# amd64). A cross build searches its sysroot (CMAKE_FIND_ROOT_PATH) the same way.
set(TESSERA_XRT AUTO CACHE STRING "Build the xrt device backend: AUTO, ON or OFF")
set_property(CACHE TESSERA_XRT PROPERTY STRINGS AUTO ON OFF)
set(XRT_ROOT "" CACHE PATH "Prefix of an XRT install (include/, lib/) when it is not in a standard place")

set(TESSERA_HAVE_XRT OFF)
if(NOT TESSERA_XRT STREQUAL "OFF")
  set(xrt_hints ${XRT_ROOT} $ENV{XILINX_XRT})
  find_path(XRT_INCLUDE_DIR NAMES experimental/xrt_xclbin.h PATH_SUFFIXES xrt include/xrt include HINTS ${xrt_hints})
  find_library(XRT_COREUTIL_LIBRARY NAMES xrt_coreutil PATH_SUFFIXES lib HINTS ${xrt_hints})
  # The device shim the core library dlopen()s: libxrt_core (PCIe: F1, Alveo) or libxrt_core
  # from the edge package (ZynqMP with zocl). It must exist at run time, not at link time.
  find_library(XRT_CORE_LIBRARY NAMES xrt_core PATH_SUFFIXES lib HINTS ${xrt_hints})
  find_library(UUID_LIBRARY NAMES uuid)  # xrt_uuid.h calls libuuid inline
  if(XRT_INCLUDE_DIR AND XRT_COREUTIL_LIBRARY AND XRT_CORE_LIBRARY AND UUID_LIBRARY)
    set(TESSERA_HAVE_XRT ON)
    message(STATUS "XRT: ${XRT_COREUTIL_LIBRARY} (the xrt device backend is built)")
  elseif(TESSERA_XRT STREQUAL "ON")
    message(FATAL_ERROR "TESSERA_XRT=ON but XRT was not found (headers: ${XRT_INCLUDE_DIR}, libxrt_coreutil: "
                        "${XRT_COREUTIL_LIBRARY}, libxrt_core: ${XRT_CORE_LIBRARY}, libuuid: ${UUID_LIBRARY}); "
                        "install libxrt-dev or pass -DXRT_ROOT=<prefix>")
  else()
    message(STATUS "XRT: not found; building without the xrt device backend (--device xrt will say so)")
  endif()
endif()
