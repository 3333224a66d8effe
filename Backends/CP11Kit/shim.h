#include <p11-kit/p11-kit.h>
