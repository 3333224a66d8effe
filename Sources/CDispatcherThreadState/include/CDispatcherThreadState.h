#ifndef SECURITYSERVICES_CDISPATCHERTHREADSTATE_H
#define SECURITYSERVICES_CDISPATCHERTHREADSTATE_H
/*
 * The dispatcher's per-thread call counts, reached through a C thread-local: Swift has no thread-local storage of
 * its own, and pthread_getspecific is a call through the PLT behind a lazily created key (a swift_once call) on every
 * routed call. The initial-exec model makes a read one load relative to %fs; the variable is 8 bytes of the static
 * TLS block, which glibc also reserves for a library opened with dlopen.
 *
 * The pointer is the Swift side's ThreadCallCounts; that side also registers a pthread key whose destructor folds
 * the counts in at thread exit and clears this pointer.
 */

extern __thread void *securityservices_dispatcher_thread_state __attribute__((tls_model("initial-exec")));

/* The calling thread's state, NULL before its first count (or after its exit destructor ran). */
static inline void *dispatcher_thread_state(void) { return securityservices_dispatcher_thread_state; }

static inline void dispatcher_set_thread_state(void *state) { securityservices_dispatcher_thread_state = state; }

#endif
