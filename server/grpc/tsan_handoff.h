// Tells ThreadSanitizer what gRPC's callback API guarantees a reactor: a reaction (OnReadDone,
// OnWriteDone, OnCancel, OnDone, an alarm's callback) runs after the call that started it
// (StartRead, StartWrite, Finish, Alarm::Set, the reactor's construction). gRPC keeps that order
// with its completion queue and abseil's mutexes inside Debian's libgrpc++, which is not built
// with TSan, so TSan would see a reactor's members written on one gRPC thread and read on another
// with nothing between them (tools/sanitizer/tsan.ignorelist has the rest of that story).
//
// A reactor calls handed_to_grpc(this) before each call that leads to a reaction and
// back_from_grpc(this) first in each reaction. That is coarser than gRPC's promise (a reaction is
// taken to follow every earlier start, not only its own), so a race between a thread that started
// an operation and an unrelated reaction can hide; races with threads that start none (the
// batcher's worker filling an answer, the drain) are still seen. Nothing outside a TSan build.
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_TSAN_BUILD 1
#endif
#endif

#ifdef TESSERA_TSAN_BUILD
#include <sanitizer/tsan_interface.h>
#endif

namespace tessera {

inline void handed_to_grpc([[maybe_unused]] const void* reactor) {
#ifdef TESSERA_TSAN_BUILD
  __tsan_release(const_cast<void*>(reactor));
#endif
}

inline void back_from_grpc([[maybe_unused]] const void* reactor) {
#ifdef TESSERA_TSAN_BUILD
  __tsan_acquire(const_cast<void*>(reactor));
#endif
}

}  // namespace tessera
