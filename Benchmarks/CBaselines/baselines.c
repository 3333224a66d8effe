#include "CBaselines.h"
void cbaselines_placeholder(void) {}
