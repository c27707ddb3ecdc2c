# Cross build for 32-bit armhf boards (Zynq-7000: ZC702, ZC706) with Debian 12 multiarch
# (tools/cross.sh installs crossbuild-essential-armhf, qemu-user and the :armhf libraries).
#   cmake -B build-armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake
set(TESSERA_CROSS_PROCESSOR arm)
set(TESSERA_CROSS_TRIPLET arm-linux-gnueabihf)
set(TESSERA_CROSS_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/toolchain-cross-common.cmake)
