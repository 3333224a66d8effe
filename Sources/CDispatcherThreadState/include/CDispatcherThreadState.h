#ifndef SECURITYSERVICES_CDISPATCHERTHREADSTATE_H
#define SECURITYSERVICES_CDISPATCHERTHREADSTATE_H
/*
 * The dispatcher's per-thread call counts, reached through C thread-locals: Swift has no thread-local storage of
 * its own, and pthread_getspecific is a call through the PLT behind a lazily created key (a swift_once call) on every
 * routed call. The initial-exec model makes a read one load relative to %fs; the variables are 32 bytes of the static
 * TLS block, which glibc also reserves for a library opened with dlopen.
 *
 * The state pointer is the Swift side's ThreadCallCounts; that side also registers a pthread key whose destructor
 * folds the counts in at thread exit and clears these variables. The last dispatcher's id and block are the hot
 * path's whole lookup: a compare with the dispatcher's id, then the block, both straight from %fs.
 */

extern __thread void *securityservices_dispatcher_thread_state __attribute__((tls_model("initial-exec")));
extern __thread long securityservices_dispatcher_last_id __attribute__((tls_model("initial-exec")));
extern __thread void *securityservices_dispatcher_last_block __attribute__((tls_model("initial-exec")));
extern __thread unsigned long securityservices_dispatcher_ticks __attribute__((tls_model("initial-exec")));

/* The calling thread's state, NULL before its first count (or after its exit destructor ran). */
static inline void *dispatcher_thread_state(void) { return securityservices_dispatcher_thread_state; }

static inline void dispatcher_set_thread_state(void *state) { securityservices_dispatcher_thread_state = state; }

/* The id of the dispatcher this thread counted for last; -1 before its first count and after its exit destructor. */
static inline long dispatcher_last_id(void) { return securityservices_dispatcher_last_id; }

/* That dispatcher's block of this thread's counts: valid while dispatcher_last_id() is the dispatcher's id. */
static inline void *dispatcher_last_block(void) { return securityservices_dispatcher_last_block; }

static inline void dispatcher_set_last(long id, void *block) {
    securityservices_dispatcher_last_id = id;
    securityservices_dispatcher_last_block = block;
}

/* One more of this thread's routed calls: the count, which the cost model's sampling reads (one call in N timed). */
static inline unsigned long dispatcher_tick(void) { return ++securityservices_dispatcher_ticks; }

#endif
