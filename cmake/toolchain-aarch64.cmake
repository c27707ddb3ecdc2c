# Cross build for aarch64 boards (ZynqMP: ZCU102, ZCU104) with Debian 12 multiarch (tools/cross.sh
# installs crossbuild-essential-arm64, qemu-user and the :arm64 libraries).
#   cmake -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
set(TESSERA_CROSS_PROCESSOR aarch64)
set(TESSERA_CROSS_TRIPLET aarch64-linux-gnu)
set(TESSERA_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross-common.cmake)
