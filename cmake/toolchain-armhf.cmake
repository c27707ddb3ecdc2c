# Cross build for 32-bit armhf boards (Zynq-7000: ZC702, ZC706) with Debian 12 multiarch
# (tools/cross.sh installs crossbuild-essential-armhf, qemu-user and the :armhf libraries).
#   cmake -B build-armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake
set(TESSERA_CROSS_PROCESSOR arm)
set(TESSERA_CROSS_TRIPLET arm-linux-gnueabihf)
set(TESSERA_CROSS_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross-common.cmake)
# GCC on 32-bit ARM notes at every std::map/json instantiation that argument passing changed in
# GCC 7.1 (-Wpsabi): it matters only when linking with code built by GCC < 7.1, which Debian 12
# has none of, and the notes bury real diagnostics.
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")
