#include "CDispatcherThreadState.h"

__thread void *securityservices_dispatcher_thread_state __attribute__((tls_model("initial-exec"))) = 0;
__thread long securityservices_dispatcher_last_id __attribute__((tls_model("initial-exec"))) = -1;
__thread void *securityservices_dispatcher_last_block __attribute__((tls_model("initial-exec"))) = 0;
__thread unsigned long securityservices_dispatcher_ticks __attribute__((tls_model("initial-exec"))) = 0;
