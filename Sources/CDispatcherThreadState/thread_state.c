#include "CDispatcherThreadState.h"

__thread void *securityservices_dispatcher_thread_state __attribute__((tls_model("initial-exec"))) = 0;
