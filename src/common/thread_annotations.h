// Clang's thread-safety analysis attributes (-Wthread-safety), so lock rules
// written next to a member are checked by the compiler instead of read by
// reviewers. They expand to nothing on other compilers; the CI's clang build
// (deploy/fuzz.sh builds every library with -Werror=thread-safety) checks
// them.
//
// How they are used (docs/design/conventions.md "Locks"):
// - a mutex is a morpheus::Mutex (common/mutex.h), a capability;
// - a member it protects is declared `T x_ GUARDED_BY(mu_);`
// - a private helper called with the lock held is declared `REQUIRES(mu_)`;
//   a public method that takes the lock itself may say `EXCLUDES(mu_)`;
// - where two locks nest, the inner one is declared `ACQUIRED_AFTER(outer)`,
//   which writes the lock order down where the locks are declared.
#pragma once

// Abseil's internal header (included through gRPC) defines some of the same
// names with the same meaning; whichever comes first is kept.
#if defined(__clang__)
#define MORPHEUS_TSA(x) __attribute__((x))
#else
#define MORPHEUS_TSA(x)
#endif

#ifndef CAPABILITY
#define CAPABILITY(x) MORPHEUS_TSA(capability(x))
#endif
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY MORPHEUS_TSA(scoped_lockable)
#endif
#ifndef GUARDED_BY
#define GUARDED_BY(x) MORPHEUS_TSA(guarded_by(x))
#endif
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) MORPHEUS_TSA(pt_guarded_by(x))
#endif
#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) MORPHEUS_TSA(acquired_before(__VA_ARGS__))
#endif
#ifndef ACQUIRED_AFTER
#define ACQUIRED_AFTER(...) MORPHEUS_TSA(acquired_after(__VA_ARGS__))
#endif
#ifndef REQUIRES
#define REQUIRES(...) MORPHEUS_TSA(requires_capability(__VA_ARGS__))
#endif
#ifndef EXCLUDES
#define EXCLUDES(...) MORPHEUS_TSA(locks_excluded(__VA_ARGS__))
#endif
#ifndef ACQUIRE
#define ACQUIRE(...) MORPHEUS_TSA(acquire_capability(__VA_ARGS__))
#endif
#ifndef RELEASE
#define RELEASE(...) MORPHEUS_TSA(release_capability(__VA_ARGS__))
#endif
#ifndef TRY_ACQUIRE
#define TRY_ACQUIRE(...) MORPHEUS_TSA(try_acquire_capability(__VA_ARGS__))
#endif
#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(x) MORPHEUS_TSA(assert_capability(x))
#endif
#ifndef RETURN_CAPABILITY
#define RETURN_CAPABILITY(x) MORPHEUS_TSA(lock_returned(x))
#endif
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS MORPHEUS_TSA(no_thread_safety_analysis)
#endif
