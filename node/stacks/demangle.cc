// SPDX-License-Identifier: MIT
// C++ names demangled with the C++ runtime's own demangler (libstdc++'s
// __cxa_demangle), for the C code of the symbolizer.
#include <cxxabi.h>
#include <stdlib.h>

#include "symbolize.h"

extern "C" char *ra_demangle(const char *name)
{
	int status = 0;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	char *out = abi::__cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}
