# Shared part of cmake/toolchain-aarch64.cmake and cmake/toolchain-armhf.cmake: a Debian multiarch
# cross build. The including file sets TESSERA_CROSS_PROCESSOR (CMAKE_SYSTEM_PROCESSOR),
# TESSERA_CROSS_TRIPLET (GNU triplet, also Debian's library directory name) and
# TESSERA_CROSS_QEMU (the qemu-user binary).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${TESSERA_CROSS_PROCESSOR})
set(CMAKE_LIBRARY_ARCHITECTURE ${TESSERA_CROSS_TRIPLET})

set(CMAKE_C_COMPILER ${TESSERA_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${TESSERA_CROSS_TRIPLET}-g++)

# Debian multiarch puts the target's libraries in /usr/lib/<triplet> and its headers in /usr/include
# (arch-dependent ones in /usr/include/<triplet>), so the "sysroot" is / and CMAKE_LIBRARY_ARCHITECTURE
# selects the right library directory. The cross compiler's own libc lives in /usr/<triplet>.
set(CMAKE_FIND_ROOT_PATH /usr/${TESSERA_CROSS_TRIPLET} /)
# Programs (protoc, grpc_cpp_plugin, python3) come from the build machine; libraries, headers and
# CMake packages only from the target's directories. PACKAGE is BOTH: Debian installs the target's
# gRPC/protobuf/spdlog config files under /usr/lib/<triplet>/cmake, the arch-all ones (CLI11,
# nlohmann-json, tomlplusplus) under /usr/share or /usr/lib/cmake.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config (libturbojpeg, spng) reads only the target's .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${TESSERA_CROSS_TRIPLET}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# CTest and gtest_discover_tests run the target's binaries under qemu-user with the target's
# dynamic loader and libraries from Debian multiarch (libc6:arm64 / libc6:armhf, installed with
# the :arch -dev packages): `-L /` maps no path, so the ELF interpreter is /lib/ld-linux-*.so.*
# of the same glibc build as the libc.so.6 it loads from /lib/<triplet> (through /etc/ld.so.cache).
# Not `-L /usr/<triplet>`: that takes ld.so from the cross toolchain's libc6-<arch>-cross
# (2.36-8cross1) while the libraries still come from /lib/<triplet> (2.36-9+deb12u14), and the two
# builds disagree on the private _rtld_global layout (the stack cache list is at 0x1178 in one and
# 0x1180 in the other). The first pthread_create then walks a list that never returns to its head
# (get_cached_stack, in guest code, no syscall): tesserad and any test that starts a thread spun at
# 100% CPU after its first log lines and, SIGTERM being blocked for sigwait, ignored SIGTERM.
set(CMAKE_CROSSCOMPILING_EMULATOR ${TESSERA_CROSS_QEMU} -L /)
